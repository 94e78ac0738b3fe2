"""The timed replay under random workloads and settings, checked after every server step.

After each prefill batch and each decode segment the whole cache is checked
(radix_evict.testing's check_cache: every pool slot free, held by exactly
one node, or held by exactly one request), and at the end every request has
finished or been refused by name, with nothing locked or leaked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.timed import ListWorkload, fixed_cost, request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from radix_evict.cache.host_tier import WRITE_POLICIES, HostTierSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.timed import server as server_mod
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.testing.invariants import check_cache

POLICIES = ["lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"]


def _held(server: Any) -> list[np.ndarray]:
    """Slots requests hold beyond the tree's: running, chunked, and in the batch just run."""
    jobs = {id(j): j for j in server.running}
    if server.chunked is not None:
        jobs[id(server.chunked)] = server.chunked
    return [j.buf[j.tree_len:j.held] for j in jobs.values()
            if j.buf is not None and j.held > j.tree_len]


class CheckedServer(server_mod.Server):
    """The server, with the cache checked after every step."""

    steps = 0

    def _check(self) -> None:
        assert self.deferred >= 0
        assert len(self.running) <= self.max_running
        check_cache(self.cache, _held(self))
        CheckedServer.steps += 1

    def _prefill(self, batch: list[Any]) -> None:
        super()._prefill(batch)
        self._check()

    def _decode(self) -> None:
        super()._decode()
        self._check()


@st.composite
def workloads(draw: Any) -> tuple[list[Any], int]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(3, 30))
    shared = [list(range(10_000 * k, 10_000 * k + int(rng.integers(0, 120)))) for k in range(3)]
    reqs, t, tok = [], 0.0, 1_000_000
    for i in range(n):
        t += float(rng.exponential(0.02))
        own = list(range(tok, tok + int(rng.integers(1, 80))))
        tok += 200
        out = list(range(tok, tok + int(rng.integers(1, 60))))
        tok += 200
        prefix = shared[int(rng.integers(0, 3))]
        reqs.append(request(i, prefix + own, out, t, priority=int(rng.integers(0, 3))))
    longest = max(len(r.prompt) + len(r.output) for r in reqs)
    pool = draw(st.integers(longest // 2, longest * 4))  # tight: retractions and refusals
    return reqs, pool


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads(), page=st.sampled_from([1, 4, 16]), policy=st.sampled_from(POLICIES),
       max_running=st.integers(1, 8), chunk=st.sampled_from([0, 16, 64]),
       reserve=st.booleans())
def test_every_step_keeps_the_cache_consistent(case: Any, page: int, policy: str,
                                               max_running: int, chunk: int,
                                               reserve: bool) -> None:
    reqs, pool = case
    pool = max(page, pool // page * page)
    spec = TimingSpec(cost_model=fixed_cost(per_mpair=0.5, per_request=0.1, per_ktoken=0.2),
                      scheduler=SchedulerSpec(max_running=max_running,
                                              chunked_prefill_size=chunk,
                                              reserve_decode=reserve))
    original = server_mod.Server
    from radix_evict.sim.timed import run as run_mod

    run_mod.Server = CheckedServer  # type: ignore[misc]
    try:
        res = replay(ListWorkload(reqs), policy, pool_tokens=pool, page_size=page, timing=spec)
    finally:
        run_mod.Server = original  # type: ignore[misc]
    t = res.timing
    assert t.finished + t.refused == len(reqs)
    for why in t.refusals:
        assert "pool holds" in why
    assert res.end_protected_tokens == 0
    assert res.end_available_tokens + res.end_evictable_tokens == res.pool_tokens
    if t.finished:
        assert t.queue_ms.p50 <= t.ttft_ms.p50 + 1e-9
        assert t.ttft_ms.max <= t.e2e_ms.max + 1e-9


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads(), page=st.sampled_from([1, 4, 16]), policy=st.sampled_from(POLICIES),
       max_running=st.integers(1, 8), write_policy=st.sampled_from(WRITE_POLICIES),
       ratio=st.sampled_from([0.3, 1.0, 3.0]), load_back=st.sampled_from([0, 4, 10]))
def test_every_step_with_a_host_tier_keeps_both_tiers_consistent(
        case: Any, page: int, policy: str, max_running: int, write_policy: str, ratio: float,
        load_back: int) -> None:
    """check_cache after every step covers the host tier too: both pools and the ledgers."""
    reqs, pool = case
    pool = max(page, pool // page * page)
    spec = TimingSpec(cost_model=fixed_cost(per_mpair=0.5, per_request=0.1, host_gbps=20.0),
                      scheduler=SchedulerSpec(max_running=max_running))
    host = HostTierSpec(ratio=ratio, write_policy=write_policy, load_back_threshold=load_back)
    original = server_mod.Server
    from radix_evict.sim.timed import run as run_mod

    run_mod.Server = CheckedServer  # type: ignore[misc]
    try:
        res = replay(ListWorkload(reqs), policy, pool_tokens=pool, page_size=page, timing=spec,
                     host=host)
    finally:
        run_mod.Server = original  # type: ignore[misc]
    assert res.timing.finished + res.timing.refused == len(reqs)
    assert res.end_protected_tokens == 0
    h = res.host
    assert h is not None
    assert h.device_hit_tokens + h.host_hit_tokens == res.hit_tokens


def test_the_fuzz_ran_steps() -> None:
    if CheckedServer.steps == 0:
        pytest.skip("run with the fuzz test above")
    assert CheckedServer.steps > 100
