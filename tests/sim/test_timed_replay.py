"""The timed replay against closed forms, conservation and determinism.

Closed forms: with one server slot, no reuse and fixed step costs, every
request's wait is Lindley's recursion; Little's law ties the server's own
time-average occupancy to throughput and latency; an infinite pool makes
every policy's timing identical (eviction is the only thing a policy does).
"""

from __future__ import annotations

import math

import pytest
from helpers.timed import ListWorkload, fixed_cost, request, unique_requests

from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload

ALL_POLICIES = ["lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"]


def _records(workload, policy="lru", pool=None, page=1, **timing):
    """Run a timed replay and return (result, per-request records by rid)."""
    from radix_evict.sim.timed import run as timed_run

    captured = {}
    original = timed_run.Server.run

    def spy(self):
        out = original(self)
        captured["records"] = {r.rid: r for r in out}
        return out

    timed_run.Server.run = spy
    try:
        res = replay(workload, policy, pool_tokens=pool, page_size=page,
                     timing=TimingSpec(**timing))
    finally:
        timed_run.Server.run = original
    return res, captured["records"]


def test_one_slot_waits_follow_lindleys_recursion():
    reqs = unique_requests(300, rate=40.0, seed=3)
    cost = fixed_cost(prefill_base=2.0, per_token=0.05, decode_base=1.5)
    res, recs = _records(ListWorkload(reqs), cost_model=cost,
                         scheduler=SchedulerSpec(max_running=1, chunked_prefill_size=0))
    wait = 0.0
    prev_arrival = prev_service = None
    waits_seen = 0
    for q in reqs:
        p, o = len(q.prompt), len(q.output)
        prefill = (2.0 + 0.05 * p) / 1e3
        service = prefill + (o - 1) * 1.5e-3
        if prev_arrival is not None:
            wait = max(0.0, wait + prev_service - (q.arrival - prev_arrival))
        r = recs[q.rid]
        assert r.queue == pytest.approx(wait, abs=1e-9), q.rid
        assert r.ttft == pytest.approx(wait + prefill, abs=1e-9)
        assert r.e2e == pytest.approx(wait + service, abs=1e-9)
        waits_seen += wait > 0
        prev_arrival, prev_service = q.arrival, service
    assert waits_seen > 30  # the load made requests queue: the recursion was exercised
    assert res.hit_rate == 0.0


def test_littles_law_on_a_long_run():
    rate = 50.0
    reqs = unique_requests(4000, rate=rate, seed=11)
    cost = fixed_cost(prefill_base=3.0, per_token=0.02, decode_base=4.0, per_request=0.5)
    res, recs = _records(ListWorkload(reqs), cost_model=cost,
                         scheduler=SchedulerSpec(max_running=8))
    t = res.timing
    n = len(recs)
    mean_e2e = sum(r.e2e for r in recs.values()) / n
    # the server's own occupancy integral against the records: an identity of the sample path
    assert t.mean_in_system == pytest.approx(n / t.makespan_s * mean_e2e, rel=1e-9)
    # and against the offered rate: L = lambda W within sampling error (4000 arrivals)
    assert t.mean_in_system == pytest.approx(rate * mean_e2e, rel=0.08)
    assert t.queue_ms.p99 > 0  # it was loaded


def test_an_infinite_pool_gives_every_policy_the_same_timing():
    w = get_workload("chat", seed=1, convs=40)
    spec = dict(scheduler=SchedulerSpec(max_running=16), slo_ttft_ms=200.0)
    seen = {}
    for policy in ALL_POLICIES:
        res = replay(w, policy, pool_tokens=10**8, timing=TimingSpec(**spec))
        assert res.evicted_tokens == 0
        d = res.timing.to_dict()
        seen[policy] = (res.hit_rate, d)
    first = seen["lru"]
    for policy, got in seen.items():
        assert got == first, policy


@pytest.mark.parametrize("reserve", [False, True])
def test_every_request_finishes_or_is_refused_by_name_under_memory_pressure(reserve):
    # prompts share a long system prompt; the pool holds only a few requests at once
    system = list(range(1000, 1400))
    reqs = []
    for i in range(120):
        user = list(range(10_000 + 1000 * i, 10_000 + 1000 * i + 150))
        out = list(range(900_000 + 1000 * i, 900_000 + 1000 * i + 200))
        reqs.append(request(i, system + user, out, arrival=0.001 * i))
    giant = request(999, list(range(5_000_000, 5_004_000)), [1, 2, 3], arrival=0.05)
    reqs.append(giant)
    reqs.sort(key=lambda q: q.arrival)
    res, recs = _records(ListWorkload(reqs), pool=3000, page=16, cost_model=fixed_cost(),
                         scheduler=SchedulerSpec(max_running=32, reserve_decode=reserve))
    assert len(recs) == len(reqs)
    assert recs["q999"].refused is not None and "pool holds 2,992" in recs["q999"].refused
    ran = [r for r in recs.values() if r.refused is None]
    assert len(ran) == len(reqs) - 1
    if not reserve:  # nothing held back for decode: it runs out of memory and retracts
        assert res.timing.retractions > 0
        assert any(r.retractions for r in ran)
    assert res.timing.refused == 1
    assert res.failed == 1
    # replay() checked the accounting: nothing locked, every slot free or in the tree
    assert res.end_protected_tokens == 0
    assert res.end_available_tokens + res.end_evictable_tokens == res.pool_tokens
    for r in ran:
        assert r.arrival <= r.admitted <= r.first_token <= r.finish


@pytest.mark.parametrize("page", [1, 16])
def test_chunked_prefill_splits_a_long_prompt_into_budgeted_steps(page):
    long = request(0, list(range(20_000)), [7, 8], arrival=0.0)
    cost = fixed_cost(prefill_base=10.0, per_token=0.001, decode_base=1.0)
    _res, recs = _records(ListWorkload([long]), page=page, cost_model=cost,
                         scheduler=SchedulerSpec(chunked_prefill_size=8192))
    # three chunks (8192, 8192, 3616 tokens): three base costs, not one
    assert recs["q0"].ttft == pytest.approx((3 * 10.0 + 20_000 * 0.001) / 1e3)
    _res1, recs1 = _records(ListWorkload([long]), page=page, cost_model=cost,
                           scheduler=SchedulerSpec(chunked_prefill_size=0))
    assert recs1["q0"].ttft == pytest.approx((10.0 + 20_000 * 0.001) / 1e3)


def test_a_request_arriving_during_anothers_decode_hits_its_prompt():
    shared = list(range(500))
    a = request(0, shared, list(range(10_000, 10_300)), arrival=0.0)
    b = request(1, [*shared, 1, 2, 3], [4, 5], arrival=0.05)  # a is still decoding
    _res, recs = _records(ListWorkload([a, b]), cost_model=fixed_cost(),
                         scheduler=SchedulerSpec(max_running=4))
    assert recs["q0"].finish > 0.05 + recs["q1"].ttft  # b ran while a decoded
    assert recs["q1"].hit_tokens == 500


def test_the_same_seed_gives_the_same_figures():
    w = get_workload("chat", seed=2, convs=60)
    spec = TimingSpec(arrivals=ArrivalSpec(rate=30.0, seed=5),
                      scheduler=SchedulerSpec(max_running=8), slo_ttft_ms=300.0)
    a = replay(w, "lru", pool_tokens=60_000, timing=spec).to_dict()
    b = replay(w, "lru", pool_tokens=60_000, timing=spec).to_dict()
    for d in (a, b):
        for k in ("wall_s", "cache_s", "eviction_s", "req_per_s"):
            d.pop(k)
        d["stats"].pop("eviction_seconds")  # CPU time, not a figure of the replay
    assert a == b
    other = TimingSpec(arrivals=ArrivalSpec(rate=30.0, seed=6),
                       scheduler=SchedulerSpec(max_running=8), slo_ttft_ms=300.0)
    c = replay(w, "lru", pool_tokens=60_000, timing=other)
    assert c.timing.ttft_ms != a["ttft_ms"]


def test_closed_loop_keeps_at_most_n_requests_in_the_system():
    reqs = unique_requests(200, rate=1000.0, seed=1)
    _res, recs = _records(ListWorkload(reqs), cost_model=fixed_cost(),
                         arrivals=ArrivalSpec(concurrency=3),
                         scheduler=SchedulerSpec(max_running=8))
    events = sorted([(r.arrival, 1) for r in recs.values()] +
                    [(r.finish, -1) for r in recs.values()], key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak == 3
    assert all(r.queue == 0 for r in recs.values())  # 3 < max_running: nobody waits


def test_time_scale_stretches_trace_gaps():
    reqs = unique_requests(50, rate=5.0, seed=4)
    _, fast = _records(ListWorkload(reqs), cost_model=fixed_cost(),
                       arrivals=ArrivalSpec(time_scale=0.5))
    _, slow = _records(ListWorkload(reqs), cost_model=fixed_cost(),
                       arrivals=ArrivalSpec(time_scale=2.0))
    first = reqs[0].arrival
    for q in reqs:
        assert fast[q.rid].arrival == pytest.approx((q.arrival - first) * 0.5)
        assert slow[q.rid].arrival == pytest.approx((q.arrival - first) * 2.0)


def test_slo_attainment_and_goodput_count_refused_requests_as_misses():
    reqs = unique_requests(40, rate=2.0, seed=9)
    reqs.append(request(99, list(range(9_000_000, 9_000_500)), [1], arrival=reqs[-1].arrival))
    res, _recs = _records(ListWorkload(reqs), pool=400, cost_model=fixed_cost(),
                         slo_ttft_ms=1e6)
    t = res.timing
    assert t.refused >= 1
    assert t.slo_attainment == pytest.approx((len(reqs) - t.refused) / len(reqs))
    assert t.goodput_rps == pytest.approx(t.throughput_rps)
    assert not math.isnan(t.ttft_ms.p99)
