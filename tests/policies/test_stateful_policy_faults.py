"""Random request streams where, now and then, the policy raises or returns garbage.

The machine of ``test_stateful`` runs a built-in policy wrapped in one whose
``score()`` can be switched to fail (raise, or return None, a string, NaN, a
complex number, a tensor, a tuple of another length). Each faulty step runs one
cache operation with the fault on: it either succeeds (it scored nothing) or
raises :class:`radix_evict.PolicyError` with the cache exactly as before, and
every invariant still holds afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
from helpers.rigs import cache_state
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from test_stateful import POLICIES, CacheMachine, chunk

from radix_evict import EvictionPolicy, KVPool, PolicyError, RadixCache, TreeNode, load_policy


def _raise(node: TreeNode) -> Any:
    raise ZeroDivisionError("score blew up")


FAULTS: dict[str, Callable[[TreeNode], Any]] = {
    "raises": _raise,
    "None": lambda n: None,
    "str": lambda n: "low",
    "NaN": lambda n: math.nan,
    "complex": lambda n: 1j,
    "tensor": lambda n: torch.tensor(1.0),
    "tuple of None": lambda n: (None,),
    "odd length": lambda n: (0,) * 7,  # no built-in scores 7-tuples
}


class Faulty(EvictionPolicy):
    """Scores like ``inner`` until ``fault`` is set."""

    name = "faulty"

    def __init__(self, inner: EvictionPolicy[Any]) -> None:
        super().__init__()
        self.inner = inner
        self.fault: Callable[[TreeNode], Any] | None = None

    def score(self, node: TreeNode) -> Any:
        if self.fault is not None:
            return self.fault(node)
        return self.inner.score(node)


class FaultyPolicyMachine(CacheMachine):
    def build_cache(self, policy: str) -> RadixCache:
        self.faulty = Faulty(load_policy(policy, POLICIES[policy]))
        cache = RadixCache(self.pool, policy=self.faulty)
        # One sound score first: it fixes the policy's score shape, which a fault then breaks.
        first = self.pool.alloc(self.page)
        assert first is not None
        cache.insert(chunk(self.page, 0), first)
        cache.evict(self.page)
        return cache

    def with_fault(self, fault: str, op: Callable[[], Any]) -> bool:
        """Run ``op`` with the fault on; True if it raised PolicyError (having changed nothing)."""
        before = cache_state(self.cache)
        self.faulty.fault = FAULTS[fault]
        try:
            op()
        except PolicyError as e:
            assert "policy 'faulty'" in str(e)
            assert cache_state(self.cache) == before, f"a {fault} score changed the cache"
            return True
        finally:
            self.faulty.fault = None
        return False

    faults = st.sampled_from(sorted(FAULTS))

    @rule(fault=faults, key=CacheMachine.keys, priority=st.integers(0, 3))
    def faulty_insert(self, fault: str, key: tuple[list[int], int], priority: int) -> None:
        tokens = self.tokens_of(*key)
        n = len(tokens) // self.page * self.page
        row = self.pool.alloc(n) if n else None
        if row is None:
            return
        if self.with_fault(fault, lambda: self.cache.insert(tokens[:n], row, priority=priority)):
            self.pool.free(row)  # refused: the slots are still the caller's

    @rule(fault=faults, key=CacheMachine.keys)
    def faulty_match(self, fault: str, key: tuple[list[int], int]) -> None:
        self.with_fault(fault, lambda: self.cache.match_prefix(self.tokens_of(*key)))

    @rule(fault=faults, n=st.integers(1, 80))
    def faulty_evict(self, fault: str, n: int) -> None:
        self.with_fault(fault, lambda: self.cache.evict(n))

    @precondition(lambda self: self.locks)
    @rule(fault=faults, i=st.integers(0, 50))
    def faulty_unlock(self, fault: str, i: int) -> None:
        node = self.locks[i % len(self.locks)]
        if not self.with_fault(fault, lambda: self.cache.dec_lock_ref(node)):
            self.locks.remove(node)


FaultyPolicyMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestFaultyPolicyMachine = FaultyPolicyMachine.TestCase


def test_the_faults_are_refused() -> None:
    """The machine can fail: each fault really is refused on the first score it affects."""
    for name, fault in FAULTS.items():
        faulty = Faulty(load_policy("lru"))
        cache = RadixCache(KVPool(size=8, device="cpu"), policy=faulty)
        first, row = cache.pool.alloc(4), cache.pool.alloc(4)
        assert first is not None and row is not None
        cache.insert([5, 6, 7, 8], first)
        faulty.fault = fault
        with pytest.raises(PolicyError):
            cache.insert([1, 2, 3, 4], row)
        assert cache.total_size() == 4, name
