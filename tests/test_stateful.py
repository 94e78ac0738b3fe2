"""Random request streams against every built-in policy and several page sizes.

After every step: each pool slot is free, held by exactly one node, or held by
a caller; sizes add up; locked nodes and the root survive; ``evict(n)`` frees
at least ``n`` unless nothing evictable is left, and takes leaves in the
policy's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
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
        self.cache = RadixCache(self.pool, policy=policy, policy_config=POLICIES[policy])

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
