"""The eight built-in policies, registered like any third-party package.

The core never imports this package by name: it is found through the
``radix_evict.policies`` entry point ``builtin`` in radix-evict's own metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from radix_evict import EvictionPolicy, PolicySpec, hookimpl

from .frequency import LFUPolicy, SLRUPolicy
from .priority import PriorityPolicy
from .recency import FIFOPolicy, FILOPolicy, LRUPolicy, MRUPolicy
from .tlru import TLRUPolicy
from .tlru import derive_config as derive_tlru_config

__all__ = [
    "FIFOPolicy",
    "FILOPolicy",
    "LFUPolicy",
    "LRUPolicy",
    "MRUPolicy",
    "PriorityPolicy",
    "SLRUPolicy",
    "TLRUPolicy",
]

# Policies that a simulation without a given config runs with a config derived from the workload.
_DERIVERS = {TLRUPolicy.name: derive_tlru_config}

_PUBLIC: tuple[tuple[type[EvictionPolicy[Any]], str], ...] = (
    (
        LRUPolicy,
        "Least recently used prefix goes first; matches how prefix reuse decays with time.",
    ),
    (LFUPolicy, "Fewest requests first, then least recent; keeps a small set of hot prompts."),
    (
        SLRUPolicy,
        "Probationary (hit fewer than protected_threshold times) before protected, "
        "LRU within each; scan resistant.",
    ),
    (PriorityPolicy, "Lowest request priority first, then least recent."),
    (
        TLRUPolicy,
        "Tail-optimized LRU: first trims conversation tails that cannot help the next "
        "turn's TTFT budget, then LRU.",
    ),
)
_HIDDEN: tuple[tuple[type[EvictionPolicy[Any]], str], ...] = (
    (FIFOPolicy, "Oldest created prefix first (hidden: extend the choice list to use it)."),
    (MRUPolicy, "Most recently used first (hidden: extend the choice list to use it)."),
    (FILOPolicy, "Newest created prefix first (hidden: extend the choice list to use it)."),
)


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register lru, lfu, slru, priority and tlru as public, fifo, mru and filo as hidden."""
    for policy, summary in _PUBLIC:
        register(PolicySpec(name=policy.name, policy=policy, summary=summary,
                            derive_config=_DERIVERS.get(policy.name)))
    for policy, summary in _HIDDEN:
        register(PolicySpec(name=policy.name, policy=policy, summary=summary, hidden=True))
