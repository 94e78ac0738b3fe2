"""Random store/lookup/load/touch/finish sequences through vLLM 0.33.0's own CPU offload
manager and the adapter: after every step vLLM's invariants hold (ref counts, the evictable
count, the free list), the tree is consistent, and no chunk in use or protected is evicted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from helpers.vllm_env import import_vllm
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from radix_evict.vllm.launch import build_manager
from radix_evict.vllm.replay import chunk_key

CHUNK_TOKENS = 16


def prefix_forest(draws: list[tuple[int, int, int]]) -> list[list[int]]:
    """Chains that share prefixes: each starts with part of an earlier chain, then new ids."""
    chains: list[list[int]] = []
    next_id = 0
    for base, cut, grow in draws:
        head = chains[base % len(chains)][: cut] if chains else []
        chains.append(head + list(range(next_id, next_id + grow)))
        next_id += grow
    return chains


@dataclass
class Req:
    ctx: Any
    keys: list[bytes]
    loads: list[list[bytes]] = field(default_factory=list)  # in flight
    stores: list[list[bytes]] = field(default_factory=list)  # in flight


class OffloadMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        import_vllm()
        from vllm.v1.kv_offload.base import LookupResult, ReqContext

        self.ReqContext, self.HIT = ReqContext, LookupResult.HIT
        self.reqs: list[Req] = []
        self.n = 0

    @initialize(
        policy=st.sampled_from(["radix_evict_lru", "radix_evict_gdsf", "radix_evict_reuse"]),
        capacity=st.integers(2, 12),
        draws=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 6), st.integers(1, 5)),
                       min_size=2, max_size=8),
    )
    def setup(self, policy: str, capacity: int, draws: list[tuple[int, int, int]]) -> None:
        self.manager = build_manager(
            {"eviction_policy": policy, "cache_policy_module_path": "radix_evict.vllm"},
            num_chunks=capacity)
        self.policy = self.manager._policy
        self.chains = prefix_forest(draws)

    # ------------------------------------------------------------------ rules
    @rule(which=st.integers(0, 99))
    def start(self, which: int) -> None:
        ctx = self.ReqContext(req_id=f"r{self.n}")
        self.n += 1
        keys = [chunk_key(b) for b in self.chains[which % len(self.chains)]]
        for i, key in enumerate(keys):
            ctx.set_offload_key_position(key, (i + 1) * CHUNK_TOKENS)
        self.manager.on_new_request(ctx)
        self.reqs.append(Req(ctx, keys))

    def _req(self, i: int) -> Req:
        return self.reqs[i % len(self.reqs)]

    @precondition(lambda self: self.reqs)
    @rule(i=st.integers(0, 99))
    def load_hits(self, i: int) -> None:
        r = self._req(i)
        hits = []
        for key in r.keys:
            if self.manager.lookup(key, r.ctx) != self.HIT:
                break
            hits.append(key)
        if hits:
            self.manager.prepare_load(hits, r.ctx)
            r.loads.append(hits)

    @precondition(lambda self: self.reqs)
    @rule(i=st.integers(0, 99), lo=st.integers(0, 8), width=st.integers(1, 8))
    def store(self, i: int, lo: int, width: int) -> None:
        r = self._req(i)
        offered = r.keys[lo: lo + width]
        if not offered:
            return
        in_use = self.in_use()
        out = self.manager.prepare_store(offered, r.ctx)
        if out is None:
            return
        evicted = set(out.evicted_keys)
        assert not evicted & set(offered), "evicted a chunk of the offer (vLLM's protected set)"
        assert not evicted & in_use, "evicted a chunk a request still reads or writes"
        if out.keys_to_store:
            r.stores.append(list(out.keys_to_store))

    @precondition(lambda self: any(r.loads for r in self.reqs))
    @rule(i=st.integers(0, 99))
    def complete_load(self, i: int) -> None:
        r = [r for r in self.reqs if r.loads][i % sum(1 for r in self.reqs if r.loads)]
        self.manager.complete_load(r.loads.pop(0), r.ctx)

    @precondition(lambda self: any(r.stores for r in self.reqs))
    @rule(i=st.integers(0, 99), ok=st.booleans())
    def complete_store(self, i: int, ok: bool) -> None:
        r = [r for r in self.reqs if r.stores][i % sum(1 for r in self.reqs if r.stores)]
        self.manager.complete_store(r.stores.pop(0), r.ctx, success=ok)

    @precondition(lambda self: self.reqs)
    @rule(i=st.integers(0, 99))
    def touch(self, i: int) -> None:
        r = self._req(i)
        self.manager.touch(r.keys, r.ctx)

    @precondition(lambda self: any(not r.loads and not r.stores for r in self.reqs))
    @rule(i=st.integers(0, 99))
    def finish(self, i: int) -> None:
        idle = [r for r in self.reqs if not r.loads and not r.stores]
        r = idle[i % len(idle)]
        self.manager.on_request_finished(r.ctx)
        self.reqs.remove(r)

    # ------------------------------------------------------------------ invariants
    def in_use(self) -> set[bytes]:
        return {k for r in self.reqs for batch in r.loads + r.stores for k in batch}

    @invariant()
    def vllms_invariants_hold(self) -> None:
        if not hasattr(self, "manager"):
            return
        m, tree = self.manager, self.policy.tree
        loading: dict[bytes, int] = {}
        for r in self.reqs:
            for batch in r.loads:
                for k in batch:
                    loading[k] = loading.get(k, 0) + 1
        writing = {k for r in self.reqs for batch in r.stores for k in batch}
        for key in self.in_use():
            assert m._policy.get(key) is not None, "a chunk in use left the tier"
        resident = list(tree._chunks.items())
        for key, chunk in resident:
            want = -1 if key in writing else loading.get(key, 0)
            assert chunk.ref_cnt == want, (key, chunk.ref_cnt, want)
            assert tree.is_pinned(key) == (chunk.ref_cnt != 0)
        idle = sum(1 for _, c in resident if c.ref_cnt == 0)
        assert m._num_evictable_cache_chunks == idle
        assert m._num_write_pending_chunks == len(writing)
        assert m._num_allocated_chunks - len(m._free_list) == len(resident)
        ids = [c.chunk_id for _, c in resident] + list(m._free_list)
        assert len(ids) == len(set(ids)), "a CPU chunk slot is used twice"
        assert tree.problems() == []


OffloadMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture(autouse=True)
def _needs_vllm(vllm: Any) -> None:
    """Skip (naming the build command) when the vLLM environment is not built."""


TestOffloadMachine = OffloadMachine.TestCase
