"""The hybrid insert: walk, claim overlaps, add the tail leaf, let each component commit.

SGLang 0.5.23 runs it as resumable steps (``unified_tree_core.py:1129-1465``:
``_insert_walk_step``, ``_insert_overlap_step``, ``_insert_commit_step``,
``_insert_tail_step``); with no host tier every step's actions apply in order,
which is what this module does directly. With a host tier, a walked node that
is on host only takes the caller's fresh KV (``_unevict_node_on_insert``,
``unified_tree_core.py:1299-1328``), and hits back nodes up (``host``). The window rules are
``components/swa.py:424-625``, the Mamba ones ``components/mamba.py:227-253``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode

if TYPE_CHECKING:
    from radix_evict.cache.hybrid.cache import HybridInsert, HybridRadixCache


class _Walk:
    """The insert's running state (one insert at a time)."""

    def __init__(
        self, prev: int, inserted: int, priority: int, evicted: int, mamba_state: bool
    ) -> None:
        self.prev = prev
        self.inserted = inserted
        self.priority = priority
        self.evicted = evicted  # the caller freed its window KV before this position
        self.mamba_state = mamba_state


def run_insert(
    cache: HybridRadixCache,
    key: np.ndarray,
    prev: int,
    inserted: int,
    priority: int,
    evicted: int,
    mamba_state: bool,
) -> HybridInsert:
    from radix_evict.cache.hybrid.cache import HybridInsert

    walk = _Walk(prev, inserted, priority, evicted, mamba_state)
    if cache.host is not None:
        cache.host.in_flight.clear()  # the previous operation's backups are acked
    root = cache.root
    root.last_access_time = cache.tick()
    root.priority = max(root.priority, priority)
    if len(key) == 0:
        if mamba_state:
            cache.pools.free(MAMBA, 1)  # nothing to attach it to
        return HybridInsert(0, True, root)
    node, total = root, 0
    while len(key):
        child = node.children.get(cache._child_key(key))
        if child is None:
            break
        child.last_access_time = cache.tick()
        m = cache._match_len(child.key, key, 0)
        node = cache.split(child, m) if m < len(child.key) else child
        node.priority = max(node.priority, priority)
        if node.has[FULL]:
            _overlap(cache, walk, node, m, total)
        else:
            _unevict(cache, walk, node, total)
        if total + m > inserted:
            if cache.host is not None:
                cache.host.hit(node)
            else:
                node.hit_count += 1
        total += m
        key = key[m:]
    new_leaf = len(key) > 0
    target = cache.add_leaf(node, key, priority) if new_leaf else node
    mamba_exist = False
    if cache.aux == SWA and new_leaf:
        _populate_window(cache, walk, target, total, total + len(target.key))
    elif cache.aux == MAMBA:
        mamba_exist = _commit_state(cache, target, new_leaf)
    if cache.aux == SWA and target is not root:
        assert cache.window is not None
        cache.lru.reset_window_mru(
            target, root, cache.window + cache.page_size, lambda n: n.has[SWA]
        )
    if new_leaf and total + len(target.key) > inserted:
        if cache.host is not None:
            cache.host.hit(target)
        else:
            target.hit_count += 1
    elif (not new_leaf and cache.host is not None and target is not root
          and target.host[FULL] and cache.host.needs_incremental(target)):  # fmt: skip
        cache.host.back_up(target)  # the tail's window or state publish (1430-1466)
    return HybridInsert(total, mamba_exist, target)


def _unevict(cache: HybridRadixCache, walk: _Walk, node: HybridNode, total: int) -> None:
    """A host-only node takes the caller's fresh full KV, and window KV from its floor on
    (``recover_after_unevict``, ``components/swa.py:539-559``: no window cap)."""
    assert cache.host is not None and walk.prev <= total, "a host-only node inside the prefix"
    node.has[FULL] = True
    cache.host.leaves.discard(node)
    cache.evictable[FULL] += len(node.key)
    cache.refresh_leaf(node)
    assert node.parent is not None
    cache.refresh_leaf(node.parent)
    if cache.aux == SWA:
        live = _clip_to_window(cache, node, total, total + len(node.key), walk.evicted)
        if live is not None:
            cache.set_aux(live[0])


def _overlap(cache: HybridRadixCache, walk: _Walk, node: HybridNode, m: int, total: int) -> None:
    """Free the caller's duplicates of ``node``; a window tombstone takes the caller's slots."""
    consumed_from = m
    if cache.aux == SWA and walk.prev < total + m:
        consumed_from = _recover_window(cache, walk, node, m, total)
    dup_start = max(0, walk.prev - total)
    if dup_start < consumed_from:
        n = consumed_from - dup_start
        # Below the caller's window floor only its full KV is left to free.
        full_only = min(max(walk.evicted - (total + dup_start), 0), n)
        cache.pools.free(FULL, n)
        if cache.aux == SWA:
            cache.pools.free(SWA, n - full_only)


def _recover_window(
    cache: HybridRadixCache, walk: _Walk, node: HybridNode, m: int, total: int
) -> int:
    """A tombstone inside the caller's window gets the caller's window KV (``swa.py:471``).

    The caller's full slots replace the node's (or, when the node's full KV is
    locked, the caller's are freed instead): either way one set of full slots
    is freed and the node's window KV is the caller's. Returns where in the
    node the caller's slots stop being duplicates.
    """
    live = _clip_to_window(cache, node, total, total + m, walk.evicted)
    if live is None:
        return m
    fragment, live_start = live
    cache.pools.free(FULL, total + m - live_start)
    cache.set_aux(fragment)
    return live_start - total


def _clip_to_window(
    cache: HybridRadixCache, node: HybridNode, start: int, end: int, window_start: int
) -> tuple[HybridNode, int] | None:
    """The part of a tombstone ``[start, end)`` at or after ``window_start``, split off."""
    if node.has[SWA]:
        return None
    live_start = max(start, window_start)
    if live_start >= end:
        return None
    if live_start > start:
        cache.split(node, live_start - start)  # ``node`` keeps the tail
    return node, live_start


def _populate_window(
    cache: HybridRadixCache, walk: _Walk, leaf: HybridNode, start: int, end: int
) -> None:
    """A new leaf keeps window KV from the caller's floor on, capped at one window."""
    live = _clip_to_window(cache, leaf, start, end, walk.evicted)
    if live is None:
        return  # all of it lies before the floor: a tombstone leaf
    fragment = live[0]
    older = _cap_leaf(cache, fragment)
    if older is not None:
        cache.set_aux(older)
    cache.set_aux(fragment)


def _cap_leaf(cache: HybridRadixCache, leaf: HybridNode) -> HybridNode | None:
    """Split a long fresh leaf so its tail is one page-aligned window (``swa.py:593``)."""
    assert cache.window is not None
    if leaf.lock[SWA] > 0:
        return None
    page = cache.page_size
    tail = -(-cache.window // page) * page
    n = len(leaf.key)
    if n <= tail:
        return None
    at = n - tail
    if page > 1 and (at % page or n % page):
        return None
    return cache.split(leaf, at)


def _commit_state(cache: HybridRadixCache, target: HybridNode, new_leaf: bool) -> bool:
    """Save the caller's state on ``target``; True when one was there (the caller's is freed)."""
    if new_leaf or not target.has[MAMBA]:
        cache.set_aux(target)
        if not new_leaf:
            target.last_access_time = cache.tick()
        _cap_states(cache, target)
        return False
    cache.lru.reset_mru(target)
    target.last_access_time = cache.tick()
    cache.pools.free(MAMBA, 1)
    return True


def _cap_states(cache: HybridRadixCache, tail: HybridNode) -> None:
    """Drop the shallowest states beyond ``mamba_states_per_path`` (``mamba.py:265``)."""
    cap = cache.mamba_states_per_path
    if cap < 0:
        return
    holders = []
    node: HybridNode | None = tail
    while node is not None and node is not cache.root:
        if node.has[MAMBA]:
            holders.append(node)
        node = node.parent
    excess = len(holders) - cap
    for node in reversed(holders):
        if excess <= 0 or node is tail:
            break
        if node.lock[MAMBA] > 0 or len(node.children) != 1 or node in cache.leaves:
            continue
        from radix_evict.cache.hybrid.evict import drop_aux

        drop_aux(cache, node, [0, 0, 0])
        excess -= 1
