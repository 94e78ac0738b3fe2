"""radix-evict hook implementations: what the entry point ``classics`` names.

Two hooks, both called once per process when radix-evict first needs its
policies: one registers ``arc``, ``s3fifo``, ``sieve`` and ``wtinylfu``, the
other puts them on the ``--policy`` choice list (registering a policy does
not by itself make it a choice, as in SGLang), so every comparison can run
them next to radix-evict's own.
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict import PolicySpec, hookimpl

from .arc import ARCPolicy
from .s3fifo import S3FIFOPolicy
from .sieve import SievePolicy
from .wtinylfu import WTinyLFUPolicy

NAMES = ("arc", "s3fifo", "sieve", "wtinylfu")

SUMMARIES = {
    "arc": (
        "ARC (Megiddo & Modha, FAST 2003): recency and frequency lists whose split adapts to "
        "ghost hits of evicted prefixes."
    ),
    "s3fifo": (
        "S3-FIFO (Yang et al., SOSP 2023): a small probationary FIFO, a main FIFO with "
        "reinsertion, and ghosts that send returning prefixes straight to main."
    ),
    "sieve": (
        "SIEVE (Zhang et al., NSDI 2024): creation order with a moving hand that spares "
        "prefixes a lookup has visited since it last passed."
    ),
    "wtinylfu": (
        "W-TinyLFU (Einziger, Friedman & Manes, ACM TOS 2017): an LRU window, then admission "
        "by a count-min sketch of prefix frequencies into a segmented LRU."
    ),
}

POLICIES = {
    "arc": ARCPolicy,
    "s3fifo": S3FIFOPolicy,
    "sieve": SievePolicy,
    "wtinylfu": WTinyLFUPolicy,
}


@hookimpl
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register the four baselines (config models from each policy's ``Config``)."""
    for name in NAMES:
        register(PolicySpec(name=name, policy=POLICIES[name], summary=SUMMARIES[name]))


@hookimpl
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Offer all four as ``--policy`` choices."""
    extend(*NAMES)
