"""The hot path: what every request goes through.

The token tree and its slot storage (``tree``, ``slots``), the KV pool and the
allocator protocol (``pool``, ``allocator``), the eviction driver
(``eviction``), :class:`~radix_evict.cache.radix_cache.RadixCache` itself, its
counters (``stats``) and the list of modules the install compiles
(``compiled``). Nothing here names a policy.
"""

from radix_evict.cache.compiled import prefer_interpreted, pure_python_requested

if pure_python_requested():
    prefer_interpreted()
