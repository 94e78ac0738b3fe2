"""Stateful policies: lifecycle callbacks, prefix fingerprints, and the exactness rules."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
import torch

from radix_evict import EvictionPolicy, KVPool, RadixCache, TreeNode
from radix_evict.policies.fingerprint import PrefixFingerprints, tokens_fingerprint
from radix_evict.testing.checks import CacheHarness
from radix_evict.testing.invariants import check_cache


class Counting(EvictionPolicy):
    """LRU that writes down every callback."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, Any]] = []

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        self.events.append(("insert", node))

    def on_hit(self, node: TreeNode) -> None:
        self.events.append(("hit", node))

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        assert tail.parent is head
        self.events.append(("split", (head, tail)))

    def on_evict(self, node: TreeNode) -> None:
        assert node.parent is not None, "on_evict runs while the node is still in the tree"
        self.events.append(("evict", node))


def _insert(cache: RadixCache, pool: KVPool, tokens: list[int]) -> None:
    m = cache.match_prefix(tokens)
    cache.inc_lock_ref(m.last_node)
    n = len(tokens) // pool.page_size * pool.page_size
    need = n - m.prefix_len
    if pool.available_size() < need:
        cache.evict(need - pool.available_size())
    new = pool.alloc(need) if pool.available_size() >= need else None
    if new is not None and n:
        cache.insert(tokens[:n], torch.cat([m.indices, new]), prev_prefix_len=m.prefix_len)
    cache.dec_lock_ref(m.last_node)


def _path(node: TreeNode) -> list[TreeNode]:
    out = []
    while node.parent is not None:
        out.append(node)
        node = node.parent
    return out[::-1]


@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_counting_policy_sees_exactly_what_the_cache_did(page: int, seed: int) -> None:
    rng = random.Random(seed)
    policy = Counting()
    pool = KVPool(size=40 * page, page_size=page, device="cpu")
    cache = RadixCache(pool, policy=policy)
    seen = {"insert": 0, "hit": 0, "split": 0, "evict": 0}
    for _ in range(150):
        tokens = [rng.randrange(3) for _ in range(rng.randrange(1, 14))]
        before = set(cache.iter_nodes())
        policy.events.clear()
        op = rng.random()
        if op < 0.3:
            m = cache.match_prefix(tokens)
        elif op < 0.9:
            m = None
            _insert(cache, pool, tokens)
        else:
            m = None
            if cache.evictable_size():
                cache.evict(rng.randrange(1, cache.evictable_size() + 1))
        after = set(cache.iter_nodes())
        events = policy.events
        inserted = [x for k, x in events if k == "insert"]
        heads = [x[0] for k, x in events if k == "split"]
        evicted = [x for k, x in events if k == "evict"]
        hits = [x for k, x in events if k == "hit"]
        # New nodes: the leaves insert created and the heads splits created; nothing else.
        assert set(inserted) | set(heads) == after - before - set(evicted)
        assert len(inserted) + len(heads) == len(set(inserted) | set(heads))
        assert set(evicted) == before - after and len(evicted) == len(set(evicted))
        assert all(x.parent is None for x in evicted)
        # Lookup hits: exactly the matched path, root excluded, shallow to deep.
        if m is not None:
            assert hits == ([] if m.prefix_len == 0 else _path(m.last_node))
            seen["hit"] += len(hits)
        seen["insert"] += len(inserted)
        seen["split"] += len(heads)
        seen["evict"] += len(evicted)
        check_cache(cache)
    assert cache.stats.evicted_nodes == seen["evict"]
    assert all(v > 0 for v in seen.values()), seen


class Ghosts(EvictionPolicy):
    """Remembers the fingerprints of evicted prefixes; notes ghost hits on insert."""

    name = "ghosts"

    def __init__(self) -> None:
        super().__init__()
        self.fp = PrefixFingerprints()
        self.ghosts: set[int] = set()
        self.ghost_hits: list[int] = []

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        f = self.fp.of(node)
        if f in self.ghosts:
            self.ghost_hits.append(f)

    def on_evict(self, node: TreeNode) -> None:
        self.ghosts.add(self.fp.of(node))
        self.fp.forget(node)


def test_ghost_fingerprints_match_the_same_prefix_inserted_again() -> None:
    policy = Ghosts()
    pool = KVPool(size=64, page_size=1, device="cpu")
    cache = RadixCache(pool, policy=policy)
    a = list(range(100, 116))
    _insert(cache, pool, a)
    assert cache.evict(16) == 16
    assert policy.ghosts == {tokens_fingerprint(np.asarray(a))}
    # The same prefix again, now reached through a different cut of the tree: first its
    # head as a node of its own, then the rest as a new leaf that ends the same prefix.
    _insert(cache, pool, a[:5])
    _insert(cache, pool, a)
    assert policy.ghost_hits == [tokens_fingerprint(np.asarray(a))]
    # A split keeps the tail's fingerprint (it ends the same prefix) and gives the head its own.
    leaf = cache.match_prefix(a).last_node
    before = policy.fp.of(leaf)
    cache.match_prefix([*a[:9], 7])  # splits the leaf after 9 tokens
    assert policy.fp.of(leaf) == before
    head = leaf.parent
    assert head is not None and policy.fp.of(head) == tokens_fingerprint(np.asarray(a[:9]))
    assert tokens_fingerprint(np.asarray(a[:9])) != tokens_fingerprint(np.asarray(a[:8]))


def test_a_policy_without_callbacks_gets_none_decided_at_construction() -> None:
    class Plain(EvictionPolicy):
        name = "plain"

        def score(self, node: TreeNode) -> float:
            return node.last_access_time

    policy = Plain()
    pool = KVPool(size=32, page_size=1, device="cpu")
    cache = RadixCache(pool, policy=policy)
    hooks = (cache._on_insert, cache._on_hit, cache._on_split, cache._driver._on_evict)
    assert hooks == (None, None, None, None)
    calls: list[TreeNode] = []
    policy.on_insert = calls.append  # type: ignore[attr-defined]  # too late: never called
    _insert(cache, pool, [1, 2, 3])
    assert calls == []
    counting = RadixCache(KVPool(size=8, page_size=1, device="cpu"), policy=Counting())
    assert counting._on_hit is not None and counting._driver._on_evict is not None


class Raising(Counting):
    def __init__(self, when: str) -> None:
        super().__init__()
        self.when = when

    def _maybe(self, kind: str) -> None:
        if kind == self.when:
            raise RuntimeError(f"{kind} failed")

    def on_insert(self, node: TreeNode) -> None:
        self._maybe("insert")

    def on_hit(self, node: TreeNode) -> None:
        self._maybe("hit")

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        self._maybe("split")

    def on_evict(self, node: TreeNode) -> None:
        self._maybe("evict")


@pytest.mark.parametrize("when", ["insert", "hit", "split", "evict"])
def test_a_raising_callback_leaves_the_cache_consistent(when: str) -> None:
    policy = Raising("none")
    pool = KVPool(size=32, page_size=1, device="cpu")
    cache = RadixCache(pool, policy=policy)
    _insert(cache, pool, [1, 2, 3, 4])
    _insert(cache, pool, [5, 6])
    row = pool.alloc(2)
    assert row is not None
    before = (cache.total_size(), cache.num_nodes, pool.available_size())
    policy.when = when
    with pytest.raises(RuntimeError, match=f"{when} failed"):
        if when == "insert":
            cache.insert([9, 9], row)
        elif when == "hit":
            cache.match_prefix([1, 2, 3, 4])
        elif when == "split":
            cache.match_prefix([1, 2, 7])
        else:
            cache.evict(6)
    policy.when = "none"
    # The operation was undone: the caller still holds its slots, the tree is as it was.
    check_cache(cache, held_by_callers=[row])
    assert (cache.total_size(), cache.num_nodes, pool.available_size()) == before
    pool.free(row)
    freed = cache.evict(cache.evictable_size())
    assert cache.total_size() == 0 and freed > 0, "every node is still evictable"
    assert pool.available_size() == pool.size


class SharedCounter(EvictionPolicy):
    """Breaks rule 2: every score reads a counter that each lookup bumps."""

    name = "shared-counter"

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def score(self, node: TreeNode) -> float:
        return node.last_access_time + (self.lookups % 2) * 1000 * (node.num_tokens % 2)

    def on_hit(self, node: TreeNode) -> None:
        self.lookups += 1


def test_the_conformance_harness_catches_a_score_that_changed_behind_the_drivers_back() -> None:
    h = CacheHarness(SharedCounter(), pool_tokens=48, page_size=1)
    h.insert([1, 2, 3], 0, False)
    h.insert([1, 5], 0, False)
    h.insert([4], 0, False)
    h.check()
    with pytest.raises(AssertionError, match="stale score"):
        h.match([4])  # one lookup: the counter turns odd, [5]'s score changes, unoffered
        h.check()
