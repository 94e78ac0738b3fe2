"""radix-evict-costaware: example eviction policies for radix-evict (``gdsf``, ``reuse``).

Importing this package does not register anything: radix-evict finds the
plugin through the ``radix_evict.policies`` entry point when it needs it.
"""

from __future__ import annotations

from .policy import GreedyDualConfig, GreedyDualPolicy, recompute_cost_per_token
from .reuse import ReuseConfig, ReusePolicy

__all__ = [
    "GreedyDualConfig",
    "GreedyDualPolicy",
    "ReuseConfig",
    "ReusePolicy",
    "recompute_cost_per_token",
]
__version__ = "0.1.0"
