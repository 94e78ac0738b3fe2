"""radix-evict-costaware: a cost-aware eviction policy for radix-evict (policy ``gdsf``).

Importing this package does not register anything: radix-evict finds the
plugin through the ``radix_evict.policies`` entry point when it needs it.
"""

from __future__ import annotations

from .policy import GreedyDualConfig, GreedyDualPolicy, recompute_cost_per_token

__all__ = ["GreedyDualConfig", "GreedyDualPolicy", "recompute_cost_per_token"]
__version__ = "0.1.0"
