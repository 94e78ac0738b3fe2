"""Hybrid models in the tree: sliding-window and recurrent (Mamba) state beside full attention.

A model's cache layout (``layout``) names its layer groups; the hybrid cache
(``cache``) keeps, per tree node, which components are present (``node``), one
LRU list per auxiliary component (``lru``), counted pools (``pool``) and the
eviction walks with their cascade (``evict``), and an optional host tier
(``host``, ``host_match``), following SGLang 0.5.23's unified radix cache.
Full-attention-only models never come here: ``RadixCache`` stays as it is.
``__all__`` lists the modules.
"""

__all__ = ["cache", "evict", "host", "host_match", "insert", "layout", "lru", "node", "pool"]
