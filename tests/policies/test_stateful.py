"""Random request streams against every built-in policy and several page sizes.

After every step: each pool slot is free, held by exactly one node, or held by
a caller (and the pool's owner table agrees); sizes add up; locked nodes and
the root survive; ``evict(n)`` frees at least ``n`` unless nothing evictable
is left, and takes leaves in the policy's order. Misuse steps pass slots that
are not the caller's (freed, another pool's, listed twice, a node's) to
``insert`` and ``free``: each must be refused and change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from helpers.rigs import cache_state
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from radix_evict import KVPool, RadixCache, TreeNode
from radix_evict.testing.invariants import check_cache

POLICIES: dict[str, dict[str, int] | None] = {
    "lru": None,
    "lfu": None,
    "slru": {"protected_threshold": 2},
    "priority": None,
    "tlru": {"threshold": 12, "next_prompt_estimate": 4},
    "fifo": None,
    "mru": None,
    "filo": None,
}
PAGE_SIZES = (1, 4, 16)


@dataclass
class InFlight:
    node: TreeNode
    tokens: list[int]
    row: torch.Tensor
    hit: int
    priority: int


def chunk(page: int, i: int) -> list[int]:
    """Page-sized building blocks; 2 and 3 share their first half with 0 and 1."""
    base = [(i % 2) * 10 + t % 3 for t in range(page)]
    if i >= 2:
        base = base[: page // 2] + [50 + i] * (page - page // 2)
    return base


class CacheMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.inflight: list[InFlight] = []
        self.locks: list[TreeNode] = []

    @initialize(
        policy=st.sampled_from(sorted(POLICIES)),
        page=st.sampled_from(PAGE_SIZES),
        pages=st.integers(4, 10),
    )
    def setup(self, policy: str, page: int, pages: int) -> None:
        self.page = page
        self.pool = KVPool(size=page * pages, page_size=page, device="cpu")
        self.cache = self.build_cache(policy)

    def build_cache(self, policy: str) -> RadixCache:
        """The cache under test, over ``self.pool`` (subclasses wrap the policy)."""
        return RadixCache(self.pool, policy=policy, policy_config=POLICIES[policy])

    def tokens_of(self, parts: list[int], tail: int) -> list[int]:
        out: list[int] = []
        for p in parts:
            out += chunk(self.page, p)
        return out + [7] * (tail % self.page)

    keys = st.tuples(st.lists(st.integers(0, 3), min_size=0, max_size=4), st.integers(0, 20))

    @rule(key=keys, priority=st.integers(0, 3))
    def arrive(self, key: tuple[list[int], int], priority: int) -> None:
        tokens = self.tokens_of(*key)
        cache, pool = self.cache, self.pool
        m = cache.match_prefix(tokens)
        assert m.prefix_len % self.page == 0 and len(m.indices) == m.prefix_len
        assert m.prefix_len <= len(tokens)
        cache.inc_lock_ref(m.last_node)
        need = len(tokens) // self.page * self.page - m.prefix_len
        short = need - pool.available_size()
        if short > 0:
            self.evict_checked(short)
        new = pool.alloc(need)
        if new is None:
            cache.dec_lock_ref(m.last_node)
            return
        self.inflight.append(
            InFlight(m.last_node, tokens, torch.cat([m.indices, new]), m.prefix_len, priority)
        )

    @precondition(lambda self: self.inflight)
    @rule(i=st.integers(0, 50))
    def finish(self, i: int) -> None:
        req = self.inflight.pop(i % len(self.inflight))
        n = len(req.tokens) // self.page * self.page
        if n:
            matched = self.cache.insert(
                req.tokens[:n], req.row, priority=req.priority, prev_prefix_len=req.hit
            )
            assert matched >= req.hit
        self.cache.dec_lock_ref(req.node)

    @rule(key=keys)
    def lock(self, key: tuple[list[int], int]) -> None:
        m = self.cache.match_prefix(self.tokens_of(*key))
        self.cache.inc_lock_ref(m.last_node)
        self.locks.append(m.last_node)

    @precondition(lambda self: self.locks)
    @rule(i=st.integers(0, 50))
    def unlock(self, i: int) -> None:
        self.cache.dec_lock_ref(self.locks.pop(i % len(self.locks)))

    @rule(n=st.integers(1, 80))
    def evict(self, n: int) -> None:
        self.evict_checked(n)

    def evict_checked(self, n: int) -> None:
        cache = self.cache
        leaves = cache.evictable_leaves()
        order = {id(x): (cache.policy.score(x), x.last_access_time) for x in leaves}
        before = cache.evictable_size()
        freed = cache.evict(n)
        assert freed == before - cache.evictable_size()
        assert freed >= n or cache.evictable_size() == 0, (
            f"evict({n}) freed {freed} while {cache.evictable_size()} tokens stay evictable"
        )
        gone = [order[id(x)] for x in leaves if x.parent is None]
        kept = [order[id(x)] for x in leaves if x.parent is not None]
        if gone and kept:
            assert max(gone) <= min(kept), "evicted out of the policy's order"

    # ------------------------------------------------------------ misuse
    def refused(self, call: Any, match: str) -> None:
        """``call`` raises a ValueError matching ``match`` and changes nothing."""
        before = cache_state(self.cache)
        with pytest.raises(ValueError, match=match):
            call()
        assert cache_state(self.cache) == before, "a refused call changed the cache or the pool"

    def fresh_key(self, pages: int) -> list[int]:
        """Tokens no request uses, so insert would take every slot it is given."""
        return [900 + t for t in range(pages * self.page)]

    @rule(pages=st.integers(1, 3))
    def insert_freed_slots(self, pages: int) -> None:
        slots = self.pool.alloc(pages * self.page)
        if slots is None:
            return
        self.pool.free(slots)
        key = self.fresh_key(pages)
        self.refused(lambda: self.cache.insert(key, slots), "free in the pool")
        self.refused(lambda: self.pool.free(slots), "free in the pool")

    @rule(pages=st.integers(1, 3), outside=st.booleans())
    def insert_another_pools_slots(self, pages: int, outside: bool) -> None:
        n = pages * self.page
        if outside:  # a bigger pool's slots past the end of this one
            theirs = torch.arange(self.pool.size, self.pool.size + n)
            match = "outside the pool"
        else:  # slot numbers this pool has free: only its owner table can tell
            free = self.pool.free_mask().nonzero()[0]
            if len(free) < n:
                return
            theirs = torch.from_numpy(free[:n].copy())
            match = "free in the pool"
        key = self.fresh_key(pages)
        self.refused(lambda: self.cache.insert(key, theirs), match)

    @rule(pages=st.integers(1, 3), at=st.integers(0, 50))
    def insert_a_slot_twice(self, pages: int, at: int) -> None:
        n = pages * self.page
        slots = self.pool.alloc(n)
        if slots is None:
            return
        page = at % pages * self.page
        row = torch.cat([slots, slots[page : page + self.page]])  # one page listed twice
        key = self.fresh_key(pages + 1)
        self.refused(lambda: self.cache.insert(key, row), "listed more than once")
        self.refused(lambda: self.pool.free(row), "listed more than once")
        self.pool.free(slots)  # still the caller's: it cleans up

    @rule(i=st.integers(0, 50))
    def misuse_tree_slots(self, i: int) -> None:
        nodes = self.cache.iter_nodes()
        if not nodes:
            return
        node = nodes[i % len(nodes)]
        theirs = self.cache.node_slots(node)
        key = self.fresh_key(len(theirs) // self.page)
        self.refused(lambda: self.cache.insert(key, theirs), "owned by a cached node")
        self.refused(lambda: self.pool.free(theirs), "owned by a cached node")

    @precondition(lambda self: any(r.hit for r in self.inflight))
    @rule(i=st.integers(0, 50))
    def insert_the_locked_prefix_as_duplicates(self, i: int) -> None:
        """prev_prefix_len=0 after a locked match would free the tree's slots: refused."""
        reqs = [r for r in self.inflight if r.hit]
        req = reqs[i % len(reqs)]
        n = len(req.tokens) // self.page * self.page
        self.refused(
            lambda: self.cache.insert(req.tokens[:n], req.row, prev_prefix_len=0),
            "owned by a cached node",
        )

    @invariant()
    def consistent(self) -> None:
        if not hasattr(self, "cache"):
            return
        held = [r.row[r.hit :] for r in self.inflight]
        check_cache(self.cache, held_by_callers=held)
        for node in self.locks + [r.node for r in self.inflight]:
            assert node.lock_ref > 0 and self._attached(node)

    def _attached(self, node: TreeNode) -> bool:
        x: Any = node
        while x.parent is not None:
            x = x.parent
        return x is self.cache.root

    def teardown(self) -> None:
        if not hasattr(self, "cache"):
            return
        while self.inflight:
            self.finish(0)
        while self.locks:
            self.unlock(0)
        total = self.cache.total_size()
        if total:
            assert self.cache.evict(total) == total
        assert self.pool.available_size() == self.pool.size, "slots leaked"


CacheMachine.TestCase.settings = settings(
    max_examples=250,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestCacheMachine = CacheMachine.TestCase
