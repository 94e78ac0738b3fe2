"""A match that reaches host copies, and the load-back that brings them to the device.

SGLang 0.5.23 with HiCache tracks two ends per match
(``unified_tree_core.py:905-990``): the best node every component can serve from
either tier (a host copy counts, ``create_match_validator(match_device_only=False)``)
and the best one served from device alone, whose prefix the request reuses now.
Then each component reports its host hit (``finalize_match_result_in_tree_core``):

- full: the host copies' tokens from the best node up to the device end
  (``components/full.py:123-144``);
- window: the host-only window copies met walking up from the best node until
  one window is covered; the last one counts whole, so it can pass the window
  (``components/swa.py:379-420``, whose TODO says so);
- Mamba: 1 when the best node's state is on host only (``components/mamba.py:187-193``).

A load-back (``unified_radix_cache.py:1820-1935``) takes the path's host-only
full KV, the host-only window copies within one window of the best node
(``components/swa.py:1170-1203``) and the best node's host-only state
(``components/mamba.py:887-912``), and skips when the full part is under
``load_back_threshold`` and nothing auxiliary is asked. It locks the host node
itself while it evicts for room (``unified_radix_cache.py:1830-1833``): the window
lock counts from there, host-only nodes included, so it can stop short of the
device end. Its host lock on the node, released when it ends, puts the window's or
state's host-only copies back at the host LRU's MRU end
(:meth:`~radix_evict.cache.hybrid.host.HybridHost.release_host_lock`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode

if TYPE_CHECKING:
    from radix_evict.cache.hybrid.cache import HybridMatch, HybridRadixCache


def match_with_host(cache: HybridRadixCache, key: np.ndarray) -> HybridMatch:
    """``match_prefix`` with a host tier: the device prefix, and what host copies add."""
    from radix_evict.cache.hybrid.cache import HybridMatch

    check, check_dev = cache._validators(host=True), cache._validators()
    node, offset, full_hit, walked = cache.root, 0, 0, 0
    best, best_len, dev, dev_len = cache.root, 0, cache.root, 0
    ck = cache._child_key(key)
    while offset < len(key) and ck in node.children:
        child = node.children[ck]
        if not (child.has[FULL] or child.host[FULL]):
            break  # a dead node (never kept here, as SGLang's stop says)
        m = cache._match_len(child.key, key, offset)
        full_hit += m
        partial = m < len(child.key)
        node = cache.split(child, m) if partial else child
        walked += m
        if check(node):
            best, best_len = node, walked
        if check_dev(node):
            dev, dev_len = node, walked
        if partial:
            break
        offset += m
        if offset < len(key):
            ck = cache._child_key(key, offset)
    cache._match_touch(best)
    host_len = _full_host_hit(cache, best, dev)
    swa_host = _window_host_hit(cache, best) if cache.aux == SWA else 0
    mamba_host = int(cache.aux == MAMBA and best.host[MAMBA] and not best.has[MAMBA])
    return HybridMatch(
        dev_len, full_hit, dev, cache._branching(full_hit, dev_len + host_len),
        best_len, best, host_len, swa_host, mamba_host,
    )  # fmt: skip


def _full_host_hit(cache: HybridRadixCache, best: HybridNode, dev: HybridNode) -> int:
    n, cur = 0, best
    while cur is not dev and cur is not cache.root:
        if cur.host[FULL]:
            n += len(cur.key)
        assert cur.parent is not None
        cur = cur.parent
    return n


def _window_host_hit(cache: HybridRadixCache, best: HybridNode) -> int:
    window = cache.window
    assert window is not None
    covered = hit = 0
    cur = best
    while cur is not cache.root and covered < window:
        if cur.has[SWA]:
            covered += len(cur.key)
        elif cur.host[SWA]:
            hit += len(cur.key)
            covered += len(cur.key)
        else:
            break
        assert cur.parent is not None
        cur = cur.parent
    return hit


def _to_load(
    cache: HybridRadixCache, node: HybridNode
) -> tuple[list[HybridNode], HybridNode, list[HybridNode], bool]:
    """The host-only full path, its device end, the window copies and state a load-back
    of ``node`` moves."""
    full = []
    cur = node
    while not cur.has[FULL]:
        full.append(cur)
        assert cur.parent is not None
        cur = cur.parent
    anchor = cur
    window = []
    if cache.aux == SWA:
        assert cache.window is not None
        covered, cur = 0, node
        while cur is not cache.root and covered < cache.window:
            if not (cur.has[SWA] or cur.host[SWA]):
                break
            if not cur.has[SWA]:
                window.append(cur)
            covered += len(cur.key)
            assert cur.parent is not None
            cur = cur.parent
    state = cache.aux == MAMBA and node.host[MAMBA] and not node.has[MAMBA]
    return full, anchor, window, state


def load_back(cache: HybridRadixCache, match: HybridMatch) -> HybridMatch:
    """Load ``match.host_node``'s host-only copies to the device, evicting device KV for
    room with the path locked; ``match`` itself when nothing is loaded."""
    host = cache.host
    node = match.host_node
    if host is None or node is None or node is match.node:
        return match
    from radix_evict.cache.hybrid.cache import HybridMatch

    full, _, window, state = _to_load(cache, node)
    need = [sum(len(n.key) for n in full), sum(len(n.key) for n in window), int(state)]
    if need[FULL] < max(1, host.load_back_threshold) and not (window or state):
        host.release_host_lock(node)
        return match
    # SGLang locks the host node itself while it evicts for room
    # (``unified_radix_cache.py:1833``): full KV root-ward through the host-only
    # segment (nothing there is on device: no ledger moves), the window from the host
    # node up (host-only nodes count towards it, ``components/swa.py:849-903``), the
    # state on the host node. The window lock can thus stop short of the device end.
    receipt = cache.inc_lock_ref(node)
    ok = True
    for c in (FULL, SWA, MAMBA):  # full first; the others' shortfall in the controller's load
        short = need[c] - cache.pools.available(c)
        if short > 0:
            cache.evict(**{("full", "swa", "mamba")[c]: short})
        ok = need[c] <= cache.pools.available(c)
        if not ok:
            break
    cache.dec_lock_ref(receipt)
    if not ok:
        host.stats.load_back_failed += 1
        host.release_host_lock(node)
        return match
    for c in (FULL, SWA, MAMBA):
        cache.pools.alloc(c, need[c])
        host.stats.loaded[c] += need[c]
    host.stats.load_backs += 1
    for n in reversed(full):  # root-ward first, so each parent is on device already
        n.has[FULL] = True
        host.leaves.discard(n)
        cache.evictable[FULL] += len(n.key)
        cache.refresh_leaf(n)
        assert n.parent is not None
        cache.refresh_leaf(n.parent)
    for n in [*reversed(window), *([node] if state else [])]:  # root-ward first (swa.py:1190)
        cache.set_aux(n)
    host.release_host_lock(node)  # at the load's ack
    at = match.host_prefix_len
    return HybridMatch(at, match.full_prefix_len, node, cache._branching(match.full_prefix_len, at),
                       at, node)  # fmt: skip
