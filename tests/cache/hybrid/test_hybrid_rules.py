"""The hybrid cache's rules on worked examples (the ones docs/hybrid.md walks through).

Each example states what SGLang 0.5.23's unified tree does (the file:line is in
the docs) and checks radix-evict's cache does the same; bad input gets a clear
error and leaves the cache as it was.
"""

from __future__ import annotations

import numpy as np
import pytest

from radix_evict.cache.hybrid.cache import HybridRadixCache
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA
from radix_evict.cache.hybrid.pool import HybridPools, PoolAccountingError
from radix_evict.errors import PolicyConfigError


def swa_cache(window: int = 4, page: int = 1, full: int = 100, swa: int = 100) -> HybridRadixCache:
    return HybridRadixCache(HybridPools(full, swa, 0, page), window=window)


def add(cache: HybridRadixCache, tokens: np.ndarray, floor: int = 0) -> None:
    """One request: match, lock, alloc what is new, insert, unlock (window floor ``floor``)."""
    m = cache.match_prefix(tokens)
    r = cache.inc_lock_ref(m.node)
    n = len(tokens) - m.prefix_len
    cache.pools.alloc(FULL, n)
    aux = cache.aux
    if aux == SWA:
        cache.pools.alloc(SWA, n)
        cache.pools.free(SWA, max(0, floor - m.prefix_len))
    elif aux == MAMBA:
        cache.pools.alloc(MAMBA, 1)
    cache.insert(tokens, prev_prefix_len=m.prefix_len, swa_evicted_len=floor,
                 mamba_state=aux == MAMBA)  # fmt: skip
    cache.dec_lock_ref(r)


def check_ledgers(cache: HybridRadixCache) -> None:
    """Per component: the nodes' slots = evictable + protected = pool size - free."""
    cache.check()
    for c in (FULL, SWA, MAMBA):
        held = sum(cache.amount(n, c) for n in cache.nodes() if n is not cache.root)
        assert held == cache.evictable[c] + cache.protected[c]
        assert held == cache.pools.size[c] - cache.pools.free_count[c]


def test_a_new_leaf_keeps_one_window_of_window_kv() -> None:
    """20 tokens, window 4: the leaf splits so its window KV covers one window; all of it stays."""
    cache = swa_cache()
    add(cache, np.arange(20))
    (a,) = cache.root.children.values()
    (b,) = a.children.values()
    assert (len(a.key), a.has[SWA], len(b.key), b.has[SWA]) == (16, True, 4, True)
    assert cache.lru.order() == [b, a]
    check_ledgers(cache)


def test_window_floor_leaves_a_tombstone_and_the_match_stops_before_it() -> None:
    """The request freed its window KV before 12: [0, 12) is a tombstone, [12, 20) lives."""
    cache = swa_cache()
    add(cache, np.arange(20), floor=12)
    m = cache.match_prefix(np.arange(20))
    assert (m.prefix_len, m.full_prefix_len) == (20, 20)  # 8 live tokens >= window 4
    m = cache.match_prefix(np.arange(14))  # split at 14: only 2 live tokens after the tombstone
    assert (m.prefix_len, m.full_prefix_len) == (0, 14)
    assert m.branching_len == 14
    check_ledgers(cache)


def test_window_eviction_tombstones_inner_nodes_and_deletes_leaves() -> None:
    cache = swa_cache()
    add(cache, np.arange(20))
    assert cache.evict(swa=10) == (0, 16, 0)  # the LRU tail is the 16-token inner node
    (a,) = cache.root.children.values()
    assert a.has == [True, False, False]
    assert cache.match_prefix(np.arange(20)).prefix_len == 20  # the last 4 live tokens suffice
    assert cache.evict(swa=1) == (4, 4, 0)  # the leaf goes whole, full KV with it
    check_ledgers(cache)


def test_an_insert_brings_a_tombstone_back_inside_the_callers_window() -> None:
    """[0, 16) is a tombstone; a request that shares it and diverges after recomputes it.

    Its window floor is 8: [8, 16) takes the request's fresh window KV (the node's
    old full slots are freed in exchange), [0, 8) stays a tombstone and the
    request's copies of it are freed as duplicates.
    """
    cache = swa_cache()
    add(cache, np.arange(20))
    cache.evict(swa=10)  # [0, 16) loses its window KV
    free_full = cache.pools.free_count[FULL]
    add(cache, np.concatenate([np.arange(16), np.arange(500, 504)]), floor=8)
    (a,) = cache.root.children.values()
    (b,) = a.children.values()
    assert (len(a.key), a.has[SWA], len(b.key), b.has[SWA]) == (8, False, 8, True)
    assert len(b.children) == 2
    assert cache.pools.free_count[FULL] == free_full - 4  # only the new leaf's 4 are kept
    check_ledgers(cache)


def test_window_lock_covers_window_tokens_and_marks_its_boundary() -> None:
    """Nodes [0,2) -> [2,8) -> [8,12), window 6: a lock on the last takes [8,12) and [2,8)."""
    cache = swa_cache(window=6)
    add(cache, np.arange(8))  # the leaf cap splits it: [0,2) -> [2,8)
    add(cache, np.arange(12))
    m = cache.match_prefix(np.arange(12))
    r = cache.inc_lock_ref(m.node)
    (a,) = cache.root.children.values()
    (b,) = a.children.values()
    (c,) = b.children.values()
    assert [len(n.key) for n in (a, b, c)] == [2, 6, 4]
    assert [n.lock[SWA] for n in (a, b, c)] == [0, 1, 1]
    assert [n.lock[FULL] for n in (a, b, c)] == [1, 1, 1]
    assert r.swa_uuid == b.swa_uuid is not None
    assert cache.protected[SWA] == 10 and cache.evict(swa=100) == (0, 2, 0)
    cache.dec_lock_ref(r)
    assert cache.protected == [0, 0, 0]
    with pytest.raises(RuntimeError, match="not held"):
        cache.dec_lock_ref(r)
    check_ledgers(cache)


def test_full_eviction_follows_the_policy_and_takes_every_component() -> None:
    cache = HybridRadixCache(HybridPools(100, 100, 0, 1), window=4, policy="fifo")
    add(cache, np.arange(10))
    add(cache, np.arange(100, 110))
    cache.match_prefix(np.arange(10))  # fifo ignores the touch: the older one goes first
    assert cache.evict(full=1) == (4, 4, 0)  # the older request's leaf [6, 10), both components
    assert cache.match_prefix(np.arange(10)).prefix_len == 6
    assert cache.match_prefix(np.arange(100, 110)).prefix_len == 10
    check_ledgers(cache)


def test_mamba_state_only_where_saved() -> None:
    cache = HybridRadixCache(HybridPools(100, 0, 10, 1), mamba=True)
    add(cache, np.arange(10))
    m = cache.match_prefix(np.arange(20))
    assert (m.prefix_len, m.full_prefix_len, m.branching_len) == (10, 10, None)
    m = cache.match_prefix(np.arange(6))  # splits [0,10): the new parent has no state
    assert (m.prefix_len, m.full_prefix_len, m.branching_len) == (0, 6, 6)
    add(cache, np.arange(10))  # the state exists already: the caller's is freed
    assert cache.pools.free_count[MAMBA] == 9
    assert cache.evict(mamba=1) == (4, 0, 1)  # the leaf [6,10) holds it: deleted whole
    check_ledgers(cache)


def test_mamba_states_per_path_cap_drops_the_shallowest() -> None:
    cache = HybridRadixCache(HybridPools(100, 0, 10, 1), mamba=True, mamba_states_per_path=2)
    for n in (4, 8, 12):
        add(cache, np.arange(n))
    states = [n for n in cache.nodes() if n.has[MAMBA]]
    assert sorted(len(n.key) for n in states) == [4, 4]  # [4,8) and [8,12); [0,4) dropped
    check_ledgers(cache)


def test_page_sizes_cut_keys_to_pages() -> None:
    cache = swa_cache(window=8, page=4)
    add(cache, np.arange(18)[:16])
    assert cache.match_prefix(np.arange(18)).prefix_len == 16
    # No tombstone on the path: window KV from the root on serves any length, even
    # under a window (SGLang's window count starts at infinity, swa.py:362).
    assert cache.match_prefix(np.arange(7)).prefix_len == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(window=4, mamba=True), "one auxiliary component"),
        (dict(window=0), "positive number of tokens"),
        (dict(mamba=True, mamba_states_per_path=0), "-1 or >= 1"),
    ],
)
def test_bad_construction_is_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HybridRadixCache(HybridPools(10, 10, 10, 1), **kwargs)


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(PolicyConfigError):
        HybridRadixCache(HybridPools(10, 10, 0, 1), window=4, policy="no-such-policy")


def test_bad_calls_leave_the_cache_as_it_was() -> None:
    cache = swa_cache(page=4)
    add(cache, np.arange(8))
    before = (list(cache.evictable), list(cache.pools.free_count))
    with pytest.raises(ValueError, match="page-aligned"):
        cache.insert(np.arange(8), swa_evicted_len=3)
    with pytest.raises(ValueError, match="full must be >= 0"):
        cache.evict(full=-1)
    with pytest.raises(ValueError, match="prev_prefix_len must be >= 0"):
        cache.insert(np.arange(8), prev_prefix_len=-4)
    with pytest.raises(ValueError, match="one sequence"):
        cache.insert(np.zeros((2, 4), dtype=np.int64))
    with pytest.raises(PoolAccountingError, match="freed twice"):
        cache.pools.free(FULL, 1000)
    assert (cache.evictable, cache.pools.free_count) == before
    mamba = HybridRadixCache(HybridPools(10, 0, 1, 1), mamba=True)
    with pytest.raises(ValueError, match="mamba_state=True"):
        mamba.insert(np.arange(3))


def test_check_catches_a_ledger_that_drifted() -> None:
    cache = swa_cache()
    add(cache, np.arange(20))
    cache.check()
    cache.evictable[SWA] += 1
    with pytest.raises(AssertionError, match="ledgers say"):
        cache.check()
