"""radix-evict hook implementations: what the entry point ``costaware`` names.

Two hooks, both called once per process when radix-evict first needs its
policies: one registers ``gdsf`` and ``reuse``, the other puts them and
radix-evict's hidden ``fifo`` on the ``--policy`` choice list (registering a
policy does not by itself make it a choice, as in SGLang).
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict import PolicySpec, hookimpl

from .policy import GreedyDualPolicy
from .reuse import ReusePolicy

SUMMARY = (
    "Cost-aware GreedyDual-Size-Frequency: recency plus credit for leaves that are dear to "
    "recompute (deep in long contexts) and often hit."
)
REUSE_SUMMARY = (
    "Recency with a head start for prefixes a request came back for (lookup hits, ghost "
    "entries of evicted ones): one-off prompts and dead replies go first."
)


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register ``gdsf`` and ``reuse`` (config models from each policy's ``Config``)."""
    register(PolicySpec(name="gdsf", policy=GreedyDualPolicy, summary=SUMMARY))
    register(PolicySpec(name="reuse", policy=ReusePolicy, summary=REUSE_SUMMARY))


@hookimpl
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Offer ``gdsf``, ``reuse`` and the built-in (hidden) ``fifo`` as ``--policy`` choices."""
    extend("gdsf", "reuse", "fifo")
