"""The host tier (SGLang's HiCache): docs/hicache.md's rules, one worked example each.

Each test builds a small cache, runs requests as the replay does (match,
load back what is on host, lock, evict the shortfall, insert, unlock) and
checks the tiers node by node; every step ends with the full invariant check
(both tiers, both pools, the ledgers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import torch

from radix_evict import KVPool, RadixCache
from radix_evict.cache.host_tier import HostTierSpec, host_tokens_for_ratio
from radix_evict.testing.invariants import check_cache


class TierRig:
    """A device pool of ``size`` tokens with a host tier of ``host`` tokens."""

    def __init__(self, size: int, host: int, write_policy: str = "write_through",
                 policy: str = "lru", page_size: int = 1, host_policy: str | None = None,
                 **spec: Any) -> None:
        self.pool = KVPool(size=size, page_size=page_size, device="cpu")
        spec.setdefault("load_back_threshold", 1)  # SGLang's 10 where a test says so
        self.cache = RadixCache(self.pool, policy=policy, host_tier=HostTierSpec(
            tokens=host, write_policy=write_policy, policy=host_policy, **spec))
        self.loads: list[bool] = []

    @property
    def host(self) -> Any:
        return self.cache.host_tier

    def request(self, tokens: Sequence[int]) -> tuple[int, int]:
        """One request, as the replay runs it; returns (device hit, host hit loaded back)."""
        cache, pool = self.cache, self.pool
        m = cache.match_prefix(tokens)
        node, hit, prefix, loaded_len = m.last_node, m.prefix_len, m.indices, 0
        if m.host_len:
            loaded = cache.load_back(m.host_node)
            self.loads.append(loaded is not None)
            if loaded is not None:
                node, loaded_len = m.host_node, m.host_len
                prefix = torch.cat([prefix, loaded])
        cache.inc_lock_ref(node)
        P = self.pool.page_size
        have = hit + loaded_len
        need = -(-(len(tokens) - have) // P) * P
        short = need - pool.available_size()
        if short > 0:
            cache.evict(short)
        new = pool.alloc(need)
        assert new is not None
        row = torch.cat([prefix, new])
        L = len(tokens) // P * P
        if L:
            cache.insert(tokens[:L], row[:L], prev_prefix_len=have)
        if len(row) > L:
            pool.free(row[L:])
        cache.dec_lock_ref(node)
        check_cache(cache)
        return hit, loaded_len

    def state(self) -> dict[tuple[int, ...], str]:
        """Each node's key (from the root) -> D, DH or H."""
        out = {}
        for x in self.cache.iter_nodes():
            path: list[int] = []
            y = x
            while y.parent is not None:
                path[:0] = y.key.tolist()
                y = y.parent
            out[tuple(path)] = ("D" if x.value is not None else "") + (
                "H" if x.host_value is not None else "")
        return out


A = list(range(0, 8))
B = list(range(100, 108))
C = list(range(200, 208))


def test_write_through_backs_up_every_new_leaf_and_device_eviction_demotes() -> None:
    rig = TierRig(size=16, host=32)
    rig.request(A)
    rig.request(B)
    assert rig.state() == {tuple(A): "DH", tuple(B): "DH"}
    assert rig.host.stats.written_tokens == 16
    rig.request(C)  # the device is full: A (least recent) leaves the device, stays on host
    assert rig.state() == {tuple(A): "H", tuple(B): "DH", tuple(C): "DH"}
    assert rig.cache.evictable_size() == 16 and rig.host.host_only_tokens == 8


def test_a_match_reaching_host_loads_back_and_the_node_is_on_both_tiers() -> None:
    rig = TierRig(size=16, host=32)
    for r in (A, B, C):
        rig.request(r)
    m = rig.cache.match_prefix([*A, 9])
    assert (m.prefix_len, m.host_len, m.host_node.key.tolist()) == (0, 8, A)
    assert rig.request([*A, 9]) == (0, 8)  # loaded back: B went to host to make room
    assert rig.state()[tuple(A)] == "DH" and rig.state()[tuple(B)] == "H"
    assert rig.host.stats.loaded_tokens == 8


def test_a_host_hit_below_the_load_back_threshold_is_recomputed_and_adopted() -> None:
    rig = TierRig(size=16, host=32, load_back_threshold=10)
    for r in (A, B, C):
        rig.request(r)
    assert rig.request(A) == (0, 0)  # 8 tokens < 10: not loaded, the insert's fresh KV taken
    assert rig.loads == [False]
    assert rig.state()[tuple(A)] == "DH"
    assert rig.host.stats.unevicted_tokens == 8 and rig.host.stats.loaded_tokens == 0


def test_selective_writes_on_the_second_insert_only() -> None:
    rig = TierRig(size=32, host=32, write_policy="write_through_selective")
    rig.request(A)
    assert rig.state() == {tuple(A): "D"}
    rig.request([*A, 50, 51])  # walks A (2nd count: backed up); the new leaf has count 1
    assert rig.state() == {tuple(A): "DH", tuple([*A, 50, 51]): "D"}


def test_write_through_writes_unbacked_ancestors_first() -> None:
    rig = TierRig(size=64, host=64, write_policy="write_through", write_threshold=2)
    rig.request(A)
    rig.request(A[:4] + B)  # splits A: head [0..3] (count 2: due), tail, new leaf
    assert rig.state()[tuple(A[:4])] == "DH"
    rig.request(A[:4] + B + C)  # the B leaf reaches 2: written, its ancestors are backed up
    assert rig.state()[tuple(A[:4] + B)] == "DH"
    assert rig.state()[tuple(A)] == "D"  # the tail was never walked twice


def test_write_back_writes_only_when_the_device_evicts_and_counts_no_hits() -> None:
    rig = TierRig(size=16, host=32, write_policy="write_back", policy="lfu")
    rig.request(A)
    rig.request(A)
    rig.request(B)
    assert rig.state() == {tuple(A): "D", tuple(B): "D"}
    assert all(x.hit_count == 0 for x in rig.cache.iter_nodes())  # lfu falls back to LRU
    rig.request(C)  # A is the least recent: written, then demoted
    assert rig.state() == {tuple(A): "H", tuple(B): "D", tuple(C): "D"}
    assert rig.host.stats.written_tokens == 8


def test_write_back_drops_a_victim_the_full_host_cannot_take() -> None:
    rig = TierRig(size=16, host=8, write_policy="write_back")
    rig.request(A)
    rig.request([*B, 1, 2, 3, 4])  # 12 tokens: A goes to host, B needs 4 more
    rig.request(C)  # B's 12-token leaf cannot fit a host of 8 even after evicting A
    assert rig.host.stats.write_failed_tokens == 12
    assert rig.host.stats.evicted_tokens == 8  # A made way, in vain
    assert tuple([*B, 1, 2, 3, 4]) not in rig.state()


def test_write_back_reclaims_host_copies_of_device_nodes_before_host_leaves() -> None:
    rig = TierRig(size=16, host=16, write_policy="write_back")
    rig.request(A)
    rig.request(B)
    rig.request(C)  # A written + demoted
    assert rig.state() == {tuple(A): "H", tuple(B): "D", tuple(C): "D"}
    # A+[9]: loading A back evicts B (written: the host is full now) and A is on both tiers;
    # the extra token evicts C, whose write needs host room: A's copy is reclaimed first,
    # although the request holds A locked (device locks do not protect a host copy).
    rig.request([*A, 9])
    assert rig.host.stats.reclaimed_tokens == 8 and rig.host.stats.evicted_tokens == 0
    assert rig.state() == {tuple(A): "D", tuple([*A, 9]): "D", tuple(B): "H", tuple(C): "H"}


def test_host_eviction_ranks_host_leaves_with_the_host_policy() -> None:
    for host_policy, survivor in (("lru", C), ("mru", A)):
        rig = TierRig(size=8, host=16, policy="lru", host_policy=host_policy)
        for r in (A, B, C):
            rig.request(r)  # A then B demoted; the host holds two of A, B, C
        rig.request(list(range(300, 308)))  # C demoted: the host evicts a host leaf
        assert tuple(survivor) in rig.state(), host_policy


def test_a_device_victim_with_no_host_copy_takes_its_host_children_along() -> None:
    rig = TierRig(size=24, host=8, write_policy="write_through_selective")
    rig.request(A)
    rig.request(A + B)  # A backed up (2nd walk); the A+B leaf has count 1: device only
    rig.request(C + [1] * 8)  # the A+B leaf (no copy) is deleted; A stays (DH)
    assert tuple(A + B) not in rig.state()
    assert rig.state()[tuple(A)] in ("DH", "H")


def test_a_host_only_node_cannot_be_locked_and_load_back_refuses_device_nodes() -> None:
    rig = TierRig(size=16, host=32)
    for r in (A, B, C):
        rig.request(r)
    m = rig.cache.match_prefix(A)
    with pytest.raises(ValueError, match="host only"):
        rig.cache.inc_lock_ref(m.host_node)
    with pytest.raises(ValueError, match="on device already"):
        rig.cache.load_back(rig.cache.match_prefix(C).last_node)
    check_cache(rig.cache)


def test_spec_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="write_policy 'write_trough'"):
        HostTierSpec(tokens=8, write_policy="write_trough")
    with pytest.raises(ValueError, match="write_threshold is for write_through"):
        HostTierSpec(tokens=8, write_policy="write_back", write_threshold=2)
    with pytest.raises(ValueError, match="tokens"):
        HostTierSpec(tokens=-1)
    with pytest.raises(ValueError, match="no whole page"):
        RadixCache(KVPool(size=16, page_size=4, device="cpu"), host_tier=HostTierSpec(tokens=3))


def test_host_size_from_a_ratio_is_sglangs_one_page_more() -> None:
    assert host_tokens_for_ratio(1000, 2.0, 1) == 2001
    assert host_tokens_for_ratio(1000, 2.0, 16) == 2016  # floor(2000/16)=125 -> 126 pages
    assert host_tokens_for_ratio(4096, 1.5, 512) == 6656


@pytest.mark.parametrize("write_policy", ["write_through", "write_through_selective",
                                          "write_back"])
@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("policy", ["lru", "lfu", "priority", "mru"])
def test_random_requests_keep_both_tiers_consistent(write_policy: str, page_size: int,
                                                     policy: str) -> None:
    """Fuzz: shared prefixes, a small device, hosts of several sizes; every step checked."""
    import random

    for host in (page_size * 3, 40, 200):
        rng = random.Random(hash((write_policy, page_size, policy, host)) & 0xFFFF)
        rig = TierRig(size=48, host=host, write_policy=write_policy, policy=policy,
                      page_size=page_size, load_back_threshold=rng.choice([0, 4, 10]))
        stems = [[rng.randrange(5) * 1000 + i for i in range(rng.randrange(4, 17))]
                 for _ in range(6)]
        for _ in range(120):
            stem = rng.choice(stems)
            tail = [rng.randrange(10_000, 10_050) for _ in range(rng.randrange(0, 9))]
            tokens = stem[: rng.randrange(1, len(stem) + 1)] + tail
            if len(tokens) > 40:
                tokens = tokens[:40]
            rig.request(tokens)
            if rng.random() < 0.1 and rig.cache.host_tier.host_only_tokens:
                rig.cache.evict_host(rng.randrange(1, 9))
                check_cache(rig.cache)
        st = rig.host.stats
        assert st.written_tokens > 0


@pytest.mark.parametrize("write_policy", ["write_through", "write_back", "write_through_selective"])
def test_the_ledgers_add_up_after_a_reset_and_after_more_work(write_policy: str) -> None:
    """``reset`` frees KV on both tiers; the ledgers count it (issue #36: a false failure)."""
    pool = KVPool(size=64, device="cpu")
    cache = RadixCache(pool, policy="lru",
                       host_tier=HostTierSpec(tokens=64, write_policy=write_policy))

    def work(base: int) -> None:
        for i in range(12):
            key = list(range(base + i * 100, base + i * 100 + 16))
            cache.match_prefix(key)
            for _ in range(3):  # insert hits: write_through_selective backs up past its threshold
                if pool.available_size() < 16:
                    cache.evict(16)
                slots = pool.alloc(16)
                assert slots is not None
                cache.insert(key, slots)  # a repeat frees its duplicate slots

    work(0)
    assert cache.host_tier is not None and cache.host_tier.stats.written_tokens > 0
    check_cache(cache)
    cache.reset()
    assert cache.stats.reset_tokens > 0 and cache.host_tier.stats.reset_held_tokens > 0
    check_cache(cache)
    work(10_000)
    check_cache(cache)
