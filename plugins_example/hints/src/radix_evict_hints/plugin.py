"""radix-evict hook implementations: what the entry point ``hints`` names.

Registers ``session`` and ``retain`` and offers both as ``--policy`` choices.
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict import PolicySpec, hookimpl

from .retain import RetainPolicy
from .session import SessionPolicy

NAMES = ("session", "retain")

SUMMARIES = {
    "session": ("lru that evicts an ended session's private tail first (client hint "
                "session_end), as far as the hints prove right"),
    "retain": ("lru that keeps what a client asked to retain, or what an agent will come back "
               "for after a tool call, within a budget of the cache"),
}

POLICIES = {"session": SessionPolicy, "retain": RetainPolicy}


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register both policies (config models from each policy's ``Config``)."""
    for name in NAMES:
        register(PolicySpec(name=name, policy=POLICIES[name], summary=SUMMARIES[name]))


@hookimpl
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Offer both as ``--policy`` choices."""
    extend(*NAMES)
