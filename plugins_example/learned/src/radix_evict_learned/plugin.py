"""radix-evict hook implementations: what the entry point ``learned`` names.

One hook registers the ``learned`` policy, the other puts it on the
``--policy`` choice list (registering a policy does not by itself make it a
choice, as in SGLang).
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict import PolicySpec, hookimpl

from .policy import LearnedPolicy

NAME = "learned"
SUMMARY = (
    "Online-learned reuse predictor (logistic regression over leaf, branch and request "
    "features, labelled with a delay window as in LRB): the least likely reuse goes first."
)


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register ``learned`` (config model from the class's ``Config``)."""
    register(PolicySpec(name=NAME, policy=LearnedPolicy, summary=SUMMARY))


@hookimpl
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Offer ``learned`` as a ``--policy`` choice."""
    extend(NAME)
