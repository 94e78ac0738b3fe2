"""radix-evict hook implementations: what the entry point ``costaware`` names.

Two hooks, both called once per process when radix-evict first needs its
policies: one registers ``gdsf``, the other puts ``gdsf`` and radix-evict's
hidden ``fifo`` on the ``--policy`` choice list (registering a policy does not
by itself make it a choice, as in SGLang).
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict import PolicySpec, hookimpl

from .policy import GreedyDualPolicy

SUMMARY = (
    "Cost-aware GreedyDual-Size-Frequency: recency plus credit for leaves that are dear to "
    "recompute (deep in long contexts) and often hit."
)


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register ``gdsf`` (its config model comes from ``GreedyDualPolicy.Config``)."""
    register(PolicySpec(name="gdsf", policy=GreedyDualPolicy, summary=SUMMARY))


@hookimpl
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Offer ``gdsf`` and the built-in (hidden) ``fifo`` as ``--policy`` choices."""
    extend("gdsf", "fifo")
