"""radix-evict-classics: the caching field's baselines as radix-evict policies.

``arc`` (Megiddo & Modha, FAST 2003), ``s3fifo`` (Yang et al., SOSP 2023),
``sieve`` (Zhang et al., NSDI 2024) and ``wtinylfu`` (Einziger, Friedman &
Manes, ACM TOS 2017), each adapted to leaf-only radix eviction (its module
docstring says how). Importing this package registers nothing: radix-evict
finds the plugin through the ``radix_evict.policies`` entry point
``classics`` when it first needs a policy.
"""

from __future__ import annotations

from .arc import ARCConfig, ARCPolicy
from .s3fifo import S3FIFOConfig, S3FIFOPolicy
from .sieve import SieveConfig, SievePolicy
from .wtinylfu import CountMinSketch, WTinyLFUConfig, WTinyLFUPolicy

__all__ = [
    "ARCConfig",
    "ARCPolicy",
    "CountMinSketch",
    "S3FIFOConfig",
    "S3FIFOPolicy",
    "SieveConfig",
    "SievePolicy",
    "WTinyLFUConfig",
    "WTinyLFUPolicy",
]
__version__ = "0.1.0"
