"""The hybrid cache's host tier on worked examples (docs/hybrid.md, "Host tier").

Each example follows one of SGLang 0.5.23's unified-tree HiCache rules (the
file:line is in the docs): backups on insert per write policy, what a backup
copies of the window and the Mamba state, device eviction to host, the host hit
per component, load-back, host eviction, and an insert that reaches host-only
nodes. ``check()`` closes the accounting (device and host) after each step.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.hybrid.cache import HybridRadixCache
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA
from radix_evict.cache.hybrid.pool import HybridPools

A = np.arange(10)
B = np.arange(100, 110)


def cache_of(kind: str, host: int = 100, policy: str = "write_through", **kw: object
             ) -> HybridRadixCache:  # fmt: skip
    spec = HostTierSpec(tokens=host, write_policy=policy, **kw)  # type: ignore[arg-type]
    if kind == "swa":
        return HybridRadixCache(HybridPools(100, 100, 0), window=4, host_tier=spec)
    if kind == "mamba":
        return HybridRadixCache(HybridPools(100, 0, 4), mamba=True, host_tier=spec)
    return HybridRadixCache(HybridPools(100), host_tier=spec)


def add(cache: HybridRadixCache, tokens: np.ndarray) -> None:
    """One request: match (device prefix), lock, alloc the rest, insert, unlock."""
    m = cache.match_prefix(tokens)
    r = cache.inc_lock_ref(m.node)
    n = len(tokens) - m.prefix_len
    cache.pools.alloc(FULL, n)
    if cache.aux == SWA:
        cache.pools.alloc(SWA, n)
    elif cache.aux == MAMBA:
        cache.pools.alloc(MAMBA, 1)
    cache.insert(tokens, prev_prefix_len=m.prefix_len, mamba_state=cache.aux == MAMBA)
    cache.dec_lock_ref(r)
    cache.check()


def host_used(cache: HybridRadixCache) -> list[int]:
    assert cache.host is not None
    p = cache.host.pools
    return [p.size[c] - p.free_count[c] for c in (FULL, SWA, MAMBA)]


def shape(cache: HybridRadixCache) -> list[tuple[int, list[bool], list[bool]]]:
    return sorted((len(n.key), n.has, n.host) for n in cache.nodes() if n is not cache.root)


def test_write_through_backs_up_full_kv_and_every_window_node_within_one_window() -> None:
    c = cache_of("swa")
    add(c, A)  # a 10-token leaf capped at one window: [0,6) and [6,10), both with window KV
    assert shape(c) == [(4, [True, True, False], [True, True, False]),
                        (6, [True, True, False], [True, True, False])]  # fmt: skip
    assert host_used(c) == [10, 10, 0]  # the front's window copied whole (swa.py:126-145)


def test_write_through_selective_waits_for_the_second_hit() -> None:
    c = cache_of("swa", policy="write_through_selective")
    add(c, A)
    assert host_used(c) == [0, 0, 0]
    add(c, A)  # the tail's second hit backs it up, with its unbacked parent first
    assert host_used(c) == [10, 10, 0]


def test_device_eviction_keeps_a_backed_up_leaf_on_host() -> None:
    c = cache_of("swa")
    add(c, A)
    assert c.evict(full=10) == (10, 10, 0)  # the tail, then its parent left a leaf
    assert shape(c) == [(4, [False, False, False], [True, True, False]),
                        (6, [False, False, False], [True, True, False])]  # fmt: skip
    assert c.pools.free_count == [100, 100, 0]
    assert c.host is not None and len(c.host.lru) == 2  # host-only window copies
    c.check()


def test_an_unbacked_leaf_is_deleted() -> None:
    c = cache_of("swa", policy="write_through_selective")
    add(c, A)
    assert c.evict(full=10) == (10, 10, 0)
    assert shape(c) == []


def test_match_reports_host_hits_per_component_and_the_window_node_counts_whole() -> None:
    c = cache_of("swa")
    add(c, A)
    c.evict(full=10)
    m = c.match_prefix(A)
    assert (m.prefix_len, m.host_prefix_len, m.host_len, m.swa_host_len) == (0, 10, 10, 4)
    m = c.match_prefix(A[:6])  # the 6-token node is one host window copy: counted whole
    assert (m.prefix_len, m.host_prefix_len, m.host_len, m.swa_host_len) == (0, 6, 6, 6)


def test_load_back_brings_the_path_and_at_most_the_window_nodes_it_needs() -> None:
    c = cache_of("swa")
    add(c, A)
    c.evict(full=10)
    m = c.load_back(c.match_prefix(A))
    assert (m.prefix_len, m.node.has) == (10, [True, True, False])
    assert c.pools.free_count == [90, 96, 0]  # full path 10, window: the 4-token tail only
    assert shape(c) == [(4, [True, True, False], [True, True, False]),
                        (6, [True, False, False], [True, True, False])]  # fmt: skip
    c.check()
    assert c.match_prefix(A).prefix_len == 10


def test_mamba_states_go_to_host_and_come_back() -> None:
    c = cache_of("mamba")
    add(c, A)
    assert host_used(c) == [10, 0, 1]
    assert c.evict(full=10) == (10, 0, 1)
    m = c.match_prefix(A)
    assert (m.prefix_len, m.host_len, m.mamba_host_len) == (0, 10, 1)
    m = c.load_back(m)
    assert m.prefix_len == 10 and c.pools.free_count == [90, 0, 3]
    c.check()


def test_a_split_leaves_the_host_state_on_the_child() -> None:
    c = cache_of("mamba")
    add(c, A)
    c.evict(full=10)
    add(c, A[:5])  # unevicts the front with the caller's KV; its new state is backed up too
    assert shape(c) == [(5, [False, False, False], [True, False, True]),
                        (5, [True, False, True], [True, False, True])]  # fmt: skip
    assert host_used(c) == [10, 0, 2]


def test_an_insert_through_host_only_nodes_takes_the_callers_kv() -> None:
    c = cache_of("swa")
    add(c, A)
    c.evict(full=10)
    add(c, A)  # device prefix 0: both nodes get the caller's full and window KV
    assert c.pools.free_count == [90, 90, 0]
    assert c.host is not None and len(c.host.lru) == 0


def test_an_insert_ending_on_a_backed_node_backs_up_its_new_window() -> None:
    """An incremental backup: the node has full KV on host, its window had none."""
    c = cache_of("swa", policy="write_through_selective")
    add(c, A)
    assert c.evict(swa=6) == (0, 6, 0)  # the front's window goes: a tombstone
    add(c, A)  # the tail's second hit backs up both; the front has no window to copy
    assert host_used(c) == [10, 4, 0]
    add(c, A[:6])  # the caller's window KV brings the front back to life, then to host
    assert host_used(c) == [10, 10, 0]


def test_the_window_host_lru_drops_only_an_inner_nodes_window_copy() -> None:
    c = cache_of("swa")
    add(c, A)
    add(c, np.concatenate([A, B]))  # four backed-up nodes: 6, 4, 6, 4 tokens
    assert c.evict(swa=6) == (0, 6, 0)  # the least recent window: the root's child
    front = next(iter(c.root.children.values()))
    assert c.host is not None and c.host.lru.order() == [front]
    assert c.host.evict(SWA, 1) == 6
    assert (front.has, front.host) == ([True, False, False], [True, False, False])
    c.check()


def test_a_full_host_pool_evicts_host_leaves_then_their_bare_parents() -> None:
    c = cache_of("swa", host=10)
    add(c, A)
    c.evict(full=10)
    add(c, B)  # needs 10 host tokens: A's tail goes, then A's front, left a host leaf
    assert c.host is not None and c.host.stats.host_evicted == [10, 10, 0]
    assert all(int(n.key[0]) >= 100 for n in c.nodes() if n is not c.root)
    assert host_used(c) == [10, 10, 0]


def test_a_backup_with_no_room_fails() -> None:
    c = cache_of("swa", host=10)
    add(c, A)
    add(c, B)  # A is on device too: nothing on host can go
    assert c.host is not None and c.host.stats.write_failed == 1
    assert host_used(c) == [10, 10, 0]


def test_the_load_back_threshold_skips_short_full_only_loads() -> None:
    c = cache_of("full", load_back_threshold=20)
    add(c, A)
    c.evict(full=10)
    m = c.match_prefix(A)
    assert (m.host_len, c.load_back(m).prefix_len) == (10, 0)


def test_load_back_locks_the_host_node_so_the_window_lock_can_stop_short_of_the_device() -> None:
    """SGLang locks the load-back's host node (unified_radix_cache.py:1833): its window
    lock counts the host-only tail, so the device front's window KV may go for room."""
    c = cache_of("swa")
    add(c, A)  # [0,6) and [6,10), both on device and on host
    assert c.evict(full=4) == (4, 4, 0)  # the tail goes to host only
    c.pools.alloc(SWA, 92)  # 2 window slots free: the load must evict 2 more
    m = c.load_back(c.match_prefix(A))
    # Locked from the device front, the window lock would have covered the front's
    # window and the load would have failed. Here the front's window goes for room.
    assert m.prefix_len == 10
    assert shape(c) == [(4, [True, True, False], [True, True, False]),
                        (6, [True, False, False], [True, True, False])]  # fmt: skip
    c.check()


def test_a_load_back_that_fails_still_puts_the_host_state_at_the_mru_end() -> None:
    """The host lock's release re-inserts the host-only state at the MRU end
    (components/mamba.py:492-515), even when nothing was loaded."""
    c = cache_of("mamba")
    add(c, A)
    add(c, B)
    c.evict(full=20)  # both states on host only
    assert c.host is not None
    a, b = (next(n for n in c.root.children.values() if int(n.key[0]) == k) for k in (0, 100))
    lru = c.host.lru
    lru.reset_mru(b)  # A's state is the least recent
    assert lru.lru_unlocked() is a
    c.pools.alloc(FULL, 100)  # no device room for the load
    m = c.match_prefix(A)
    assert c.load_back(m) is m and c.host.stats.load_back_failed == 1
    assert lru.lru_unlocked() is b  # A's state went back at the MRU end
    c.pools.free(FULL, 100)
    c.check()


def test_no_incremental_backup_of_a_node_backed_up_in_the_same_insert() -> None:
    """The split-off front is backed up during the insert's walk, then gets the caller's
    state: that backup is still in flight (write_through_pending_id), so the state waits
    for the next insert (unified_tree_core.py:1438-1447)."""
    c = cache_of("mamba", policy="write_through_selective")
    add(c, A)
    add(c, A[:5])  # the split copies the hit count: the front's second hit backs it up
    assert host_used(c) == [5, 0, 0]
    add(c, A[:5])  # now the front is backed up and acked: its state is copied
    assert host_used(c) == [5, 0, 1]


@pytest.mark.parametrize(("kw", "message"), [
    ({"write_policy": "write_back"}, "'write_back' is not modelled"),
    ({"admission": "tinylfu"}, "admission is not modelled"),
])  # fmt: skip
def test_what_is_not_modelled_is_refused_by_name(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HybridRadixCache(HybridPools(100, 100), window=4,
                         host_tier=HostTierSpec(tokens=100, **kw))  # type: ignore[arg-type]


def test_check_catches_a_host_copy_the_pool_does_not_know() -> None:
    c = cache_of("swa")
    add(c, A)
    next(n for n in c.nodes() if n is not c.root).host[SWA] = False
    with pytest.raises(AssertionError, match="host component 1"):
        c.check()


@pytest.mark.parametrize("kind", ["swa", "mamba"])
@pytest.mark.parametrize("policy", ["write_through", "write_through_selective"])
def test_random_operations_keep_every_ledger_closed(kind: str, policy: str) -> None:
    rng = random.Random(7)
    c = cache_of(kind, host=60, policy=policy)
    prefixes = [np.array([rng.randrange(4) for _ in range(rng.randrange(3, 12))])
                for _ in range(6)]  # fmt: skip
    for _ in range(300):
        tokens = np.concatenate([rng.choice(prefixes), rng.choice(prefixes)])
        if rng.random() < 0.3:
            m = c.match_prefix(tokens)
            if m.host_node is not m.node:
                c.load_back(m)
        elif rng.random() < 0.5 and c.pools.available(FULL) >= len(tokens) + 1 and (
                kind != "swa" or c.pools.available(SWA) >= len(tokens)) and (
                kind != "mamba" or c.pools.available(MAMBA) >= 1):  # fmt: skip
            add(c, tokens)
        else:
            c.evict(full=rng.randrange(1, 20), swa=rng.randrange(0, 8) if kind == "swa" else 0,
                    mamba=rng.randrange(0, 2) if kind == "mamba" else 0)  # fmt: skip
        c.check()
    assert c.host is not None and c.host.stats.loaded[FULL] > 0
