"""Eviction per component, with SGLang 0.5.23's cascade.

``UnifiedRadixCache._evict_components`` (``unified_radix_cache.py:952-1045``)
walks the components in the tree's order (full first, then the auxiliary one),
each until the slots it freed, cascades included, reach what was asked of it:

- full: the evictable leaves in the eviction policy's order (lowest score first;
  a parent left a leaf joins the walk), each leaf deleted with every component it
  holds (``components/full.py:209-248``, ``unified_tree_core.py:1903-1930``);
- window and Mamba: their LRU list from the least recent end, skipping locked
  nodes. A leaf is deleted whole; an inner node loses only that component, a
  tombstone, and anything of lower eviction priority goes with it
  (``components/swa.py:742-846``, ``components/mamba.py:373-462``; the cascade is
  ``unified_tree_core.py:2125-2210``: inner priorities full 2 > window 1 > Mamba 0).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode

if TYPE_CHECKING:
    from radix_evict.cache.hybrid.cache import HybridRadixCache


def run_evict(cache: HybridRadixCache, full: int, swa: int, mamba: int) -> tuple[int, int, int]:
    for name, n in (("full", full), ("swa", swa), ("mamba", mamba)):
        if n < 0:
            raise ValueError(f"evict: {name} must be >= 0, got {n}")
    asked = [full, swa, mamba]
    freed = [0, 0, 0]
    for component in (FULL, cache.aux):
        if component is None or freed[component] >= asked[component]:
            continue
        if component == FULL:
            _walk_leaves(cache, asked[FULL], freed)
        else:
            _walk_lru(cache, component, asked[component], freed)
    return freed[0], freed[1], freed[2]


def _entry(cache: HybridRadixCache, node: HybridNode) -> tuple[Any, float, int, HybridNode]:
    return (cache.score(node), node.last_access_time, node.id, node)


def _walk_leaves(cache: HybridRadixCache, asked: int, freed: list[int]) -> None:
    """Full KV: delete leaves lowest score first (ties: least recent) until enough is out."""
    score = cache.score
    heap = [(score(n), n.last_access_time, n.id, n) for n in cache.leaves]  # _entry's, inline
    heapq.heapify(heap)
    while freed[FULL] < asked and heap:
        node = heapq.heappop(heap)[-1]
        if node not in cache.leaves:
            continue
        parent = node.parent
        evict_leaf(cache, node, freed)
        if parent is not None and parent in cache.leaves:
            heapq.heappush(heap, _entry(cache, parent))


def _walk_lru(cache: HybridRadixCache, component: int, asked: int, freed: list[int]) -> None:
    """Window or Mamba: from the LRU tail, delete leaves whole and tombstone inner nodes."""
    lru = cache.lru
    cursor = lru.lru_unlocked()
    while True:
        if cursor is not None and cursor not in lru:
            cursor = lru.lru_unlocked()
        if freed[component] >= asked or cursor is None:
            return
        x = cursor
        cursor = lru.prev_unlocked(x)
        if x in cache.leaves:
            evict_leaf(cache, x, freed)
        else:
            drop_aux(cache, x, freed)


def release(cache: HybridRadixCache, node: HybridNode, component: int, freed: list[int]) -> None:
    """Free ``node``'s ``component`` slots to its pool and count them."""
    n = cache.amount(node, component)
    if n == 0:
        return
    cache.pools.free(component, n)
    cache.evictable[component] -= n
    freed[component] += n
    node.has[component] = False
    if component != FULL and node in cache.lru:
        cache.lru.remove(node)


def drop_aux(cache: HybridRadixCache, node: HybridNode, freed: list[int]) -> None:
    """Tombstone the auxiliary component on an inner node (nothing below it cascades here)."""
    assert cache.aux is not None and node.lock[cache.aux] == 0
    release(cache, node, cache.aux, freed)
    if cache.host is not None:
        cache.host.tombstoned(node, cache.aux)
    cache.refresh_leaf(node)


def evict_leaf(cache: HybridRadixCache, node: HybridNode, freed: list[int]) -> None:
    """A device leaf goes: to host only when it is backed up, else out of the tree
    (``evict_device_leaf``, ``unified_tree_core.py:1788-1823``)."""
    if cache.host is not None and node.host[FULL]:
        cache.host.demote(node, freed)
    else:
        delete_leaf(cache, node, freed)


def delete_leaf(cache: HybridRadixCache, node: HybridNode, freed: list[int]) -> None:
    """Delete an unlocked leaf with everything it holds; a bare parent is never left behind."""
    parent = node.parent
    assert parent is not None and not node.children and not node.locked()
    for component in (FULL, SWA, MAMBA):
        release(cache, node, component, freed)
    if cache.host is not None:  # an unbacked leaf's stray window or state copies go too
        for component in (SWA, MAMBA):
            cache.host.drop_copy(node, component, [0, 0, 0])
    del parent.children[cache._child_key(node.key)]
    node.parent = None
    cache.leaves.discard(node)
    cache.refresh_leaf(parent)
    # SGLang then deletes childless ancestors without full KV (``_iteratively_delete_
    # tombstone_leaf``); a device leaf's parent always keeps its full KV on device.
    assert parent is cache.root or parent.has[FULL]
