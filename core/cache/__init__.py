"""The hot path: what every request goes through.

The token tree and its slot storage (``tree``, ``slots``), the KV pool and the
allocator protocol (``pool``, ``allocator``), the eviction driver
(``eviction``), the host tier behind it (``host_tier``: SGLang's HiCache),
:class:`~radix_evict.cache.radix_cache.RadixCache` itself over its tree
(``radix_tree``: the state and the undoable changes), its
counters (``stats``) and the list of modules the install compiles
(``compiled``), the request context a caller may pass (``context``), and the
one rule for naming a device (``device``).
Nothing here names a policy. ``__all__`` lists the modules:
each one's public names are its own (``radix_evict`` re-exports the API's).
"""

from radix_evict.cache.compiled import prefer_interpreted, pure_python_requested

__all__ = [
    "admission",
    "allocator",
    "args",
    "compiled",
    "context",
    "device",
    "eviction",
    "host_tier",
    "metrics",
    "ownership",
    "pool",
    "radix_cache",
    "radix_tree",
    "slots",
    "stats",
    "tree",
]

if pure_python_requested():
    prefer_interpreted()
