"""replay_fleet: one replica is the one-server timed replay; routers' faults are named; sums."""

from __future__ import annotations

import pytest
from helpers.timed import ListWorkload, fixed_cost, request, unique_requests

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.configs import DERIVED, PolicyRun
from radix_evict.sim.fleet.errors import FleetRouterError
from radix_evict.sim.fleet.hookspecs import hookimpl
from radix_evict.sim.fleet.registry import router_registry, routers
from radix_evict.sim.fleet.replay import FleetSpec, replay_fleet
from radix_evict.sim.fleet.router import Router, RouterConfig, RouterSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.scheduler import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload


def _chat():
    return get_workload("chat", seed=3, convs=120)


def _shared_prefix(n: int = 300):
    """Requests over a few shared system prompts, arriving fast enough to queue."""
    import numpy as np

    rng = np.random.default_rng(5)
    systems = [list(range(k * 1000, k * 1000 + 300)) for k in range(4)]
    out, t, tok = [], 0.0, 10**6
    for i in range(n):
        t += float(rng.exponential(0.02))
        q = list(range(tok, tok + int(rng.integers(5, 80))))
        tok += len(q) + 64
        out.append(request(i, systems[i % 4] + q, list(range(tok - 64, tok - 64 + 20)), t))
    return ListWorkload(out, pool=4000)


CASES = {
    "chat sessions": (_chat, 16, TimingSpec()),
    "trace times, tight pool": (_shared_prefix, 1, TimingSpec(cost_model=fixed_cost(
        per_token=0.2, decode_base=2.0, per_request=0.05), scheduler=SchedulerSpec(
        reserve_decode=False))),
    "closed loop with refusals": (lambda: ListWorkload(unique_requests(
        150, rate=50.0, seed=2, max_prompt=400), pool=300), 1,
        TimingSpec(arrivals=ArrivalSpec(concurrency=6), cost_model=fixed_cost())),
    "poisson, chunked": (_chat, 16, TimingSpec(arrivals=ArrivalSpec(rate=30.0, seed=4),
                                               scheduler=SchedulerSpec(chunked_prefill_size=256,
                                                                       max_running=8))),
}


HOST = {"host tier, write_back": HostTierSpec(tokens=40_000, write_policy="write_back")}
CASES["host tier, write_back"] = (lambda: get_workload("chat", seed=1, convs=80), 16,
                                  TimingSpec())
POOLS = {"host tier, write_back": 12_000}


def _single_and_fleet(case: str, router: str, replicas: int = 1, policy: str = "lru"):
    build, page, timing = CASES[case]
    wl = build()
    pool, host = POOLS.get(case, wl.default_pool_tokens), HOST.get(case)
    single = replay(wl, PolicyRun(policy), pool_tokens=pool, page_size=page, timing=timing,
                    host=host)
    fleet = replay_fleet(wl, PolicyRun(policy), pool_tokens=pool, page_size=page, timing=timing,
                         fleet=FleetSpec(replicas, router), host=host)
    return single, fleet


def _implemented(name: str) -> bool:
    """A router still a stub (its route raises NotImplementedError) cannot be replayed yet."""
    from radix_evict.sim.fleet.routers.least_load import LeastLoadRouter

    r = routers()[name]
    return r.router_class.route is not LeastLoadRouter.route or name == "least_load"


@pytest.mark.parametrize("router", list(routers()))
@pytest.mark.parametrize("case", list(CASES))
def test_one_replica_behind_any_router_is_the_one_server_replay(case, router):
    try:
        single, fleet = _single_and_fleet(case, router)
    except FleetRouterError as e:
        if isinstance(e.__cause__, NotImplementedError):
            pytest.skip(f"router {router} is a stub so far: {e}")
        raise
    assert single.timing is not None
    assert fleet.fleet.to_dict() == single.timing.to_dict()
    assert (fleet.hit_tokens, fleet.prompt_tokens) == (single.hit_tokens, single.prompt_tokens)
    (rep,) = fleet.per_replica
    assert rep.evicted_tokens == single.evicted_tokens
    assert rep.requests == single.requests == fleet.requests
    assert fleet.balance.requests_max_over_mean == 1.0


def test_a_derived_config_is_the_one_servers():
    single, fleet = _single_and_fleet("chat sessions", "least_load", policy="tlru")
    assert fleet.fleet.to_dict() == single.timing.to_dict()
    assert fleet.policy_config == single.policy_config is not None
    assert fleet.config_source == single.config_source == DERIVED


def test_the_cases_queue_retract_and_refuse():
    """The exactness cases exercise what could go wrong: queueing, retraction, refusals."""
    single, _ = _single_and_fleet("trace times, tight pool", "round_robin")
    assert single.timing.retractions > 0 and single.timing.peak_queue > 1
    single, _ = _single_and_fleet("closed loop with refusals", "round_robin")
    assert single.timing.refused > 0
    single, _ = _single_and_fleet("host tier, write_back", "round_robin")
    assert single.host is not None and single.host.host_hit_tokens > 0


@pytest.mark.parametrize("router", ["round_robin", "least_load", "random", "session"])
def test_per_replica_figures_add_up_to_the_fleets(router):
    _, f = _single_and_fleet("chat sessions", router, replicas=4)
    assert len(f.per_replica) == 4
    assert sum(p.requests for p in f.per_replica) == f.requests
    assert f.requests == f.fleet.finished + f.fleet.refused == _chat().num_requests
    assert sum(p.prompt_tokens for p in f.per_replica) == f.prompt_tokens
    assert sum(p.hit_tokens for p in f.per_replica) == f.hit_tokens
    assert f.hit_rate == pytest.approx(f.hit_tokens / f.prompt_tokens)
    assert f.balance.requests_max_over_mean == pytest.approx(
        max(p.requests for p in f.per_replica) * 4 / f.requests)
    assert f.gpu_hours == pytest.approx(4 * f.fleet.makespan_s / 3600)
    assert f.fleet.makespan_s == max(p.end_s for p in f.per_replica)
    assert f.to_json()["per_replica"][0]["index"] == 0


def test_round_robin_spreads_requests_evenly():
    _, f = _single_and_fleet("chat sessions", "round_robin", replicas=4)
    counts = [p.requests for p in f.per_replica]
    assert max(counts) - min(counts) <= 1


def test_sticky_sessions_hit_more_than_round_robin():
    """A conversation's next turn finds its history only on the replica that served it."""
    _, rr = _single_and_fleet("chat sessions", "round_robin", replicas=4)
    _, ss = _single_and_fleet("chat sessions", "session", replicas=4)
    assert ss.hit_rate > rr.hit_rate


def test_more_replicas_cut_queueing():
    _, one = _single_and_fleet("trace times, tight pool", "least_load", replicas=1)
    _, four = _single_and_fleet("trace times, tight pool", "least_load", replicas=4)
    assert four.fleet.queue_ms.p99 < one.fleet.queue_ms.p99


def test_the_random_router_is_reproducible():
    a = _single_and_fleet("chat sessions", "random", replicas=3)[1]
    b = _single_and_fleet("chat sessions", "random", replicas=3)[1]
    assert [p.requests for p in a.per_replica] == [p.requests for p in b.per_replica]
    assert a.fleet.to_dict() == b.fleet.to_dict()


class _Bad(Router):
    name = "bad"
    config_model = RouterConfig
    answer: object = 0

    def route(self, request, replicas):
        if request.rid == 5:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer  # type: ignore[return-value]
        return 0


class _BadPlugin:
    @hookimpl
    def radix_evict_register_routers(self, register):
        register(RouterSpec("bad", _Bad, RouterConfig, "misbehaves on request 5"))


@pytest.fixture
def bad_router():
    router_registry.add_plugin(_BadPlugin(), name="bad-plugin")
    yield _Bad
    router_registry.remove_plugin("bad-plugin")
    _Bad.answer = 0


@pytest.mark.parametrize(("answer", "shown"), [(2, "replica 2"), (-1, "replica -1"),
                                               ("0", "replica '0'"), (1.0, "replica 1.0"),
                                               (KeyError("nope"), "KeyError")])
def test_a_router_that_raises_or_picks_no_replica_is_named(bad_router, answer, shown):
    bad_router.answer = answer
    wl = ListWorkload(unique_requests(20, rate=10.0, seed=1))
    with pytest.raises(FleetRouterError) as e:
        replay_fleet(wl, PolicyRun("lru"), pool_tokens=100_000, page_size=1,
                     timing=TimingSpec(cost_model=fixed_cost()), fleet=FleetSpec(2, "bad"))
    msg = str(e.value)
    assert "'bad'" in msg and "request 5" in msg and "q5" in msg and shown in msg


def test_a_numpy_integer_is_an_index(bad_router):
    import numpy as np

    bad_router.answer = np.int64(1)
    wl = ListWorkload(unique_requests(20, rate=10.0, seed=1))
    f = replay_fleet(wl, PolicyRun("lru"), pool_tokens=100_000, page_size=1,
                     timing=TimingSpec(cost_model=fixed_cost()), fleet=FleetSpec(2, "bad"))
    assert [p.requests for p in f.per_replica] == [19, 1]


def test_replicas_must_be_a_positive_count():
    with pytest.raises(ValueError, match="replicas"):
        FleetSpec(0)


def test_a_replica_no_request_reaches_is_never_stepped(monkeypatch):
    """The work is per request: idle replicas cost nothing per event (no scan of the fleet)."""
    from radix_evict.sim.fleet.server import Replica

    steps: dict[int, int] = {}
    poll, pending = Replica.poll, Replica.run_pending

    def counted_poll(self):
        steps[self.index] = steps.get(self.index, 0) + 1
        return poll(self)

    def counted_pending(self):
        steps[self.index] = steps.get(self.index, 0) + 1
        return pending(self)

    monkeypatch.setattr(Replica, "poll", counted_poll)
    monkeypatch.setattr(Replica, "run_pending", counted_pending)
    wl = ListWorkload(unique_requests(10, rate=5.0, seed=3))
    f = replay_fleet(wl, PolicyRun("lru"), pool_tokens=100_000, page_size=1,
                     timing=TimingSpec(cost_model=fixed_cost()),
                     fleet=FleetSpec(64, "round_robin"))
    assert sorted(steps) == list(range(10))
    assert [p.requests for p in f.per_replica] == [1] * 10 + [0] * 54


class _Spy(Router):
    """Least-loaded by in-flight count; checks what the views say at every arrival."""

    name = "spy"
    config_model = RouterConfig
    seen: list = []

    def __init__(self, config, *, replicas, seed=0):
        super().__init__(config, replicas=replicas, seed=seed)
        self.open = [0] * replicas  # its own count: routed and not finished

    def route(self, request, replicas):
        for v in replicas:
            assert v.in_flight == self.open[v.index]
            assert v.pending_prefill_tokens >= 0 and v.active_kv_tokens >= 0
            assert v.waiting >= 0 and v.running >= 0
            assert 0 <= v.cached_prefix(request.key) <= len(request.key)
        type(self).seen.append([(v.pending_prefill_tokens, v.waiting) for v in replicas])
        i = min(range(len(replicas)), key=lambda k: replicas[k].in_flight)
        self.open[i] += 1
        return i

    def on_finish(self, request, replica):
        self.open[replica] -= 1


class _SpyPlugin:
    @hookimpl
    def radix_evict_register_routers(self, register):
        register(RouterSpec("spy", _Spy, RouterConfig, "checks the views"))


def test_the_views_agree_with_the_routers_own_count():
    router_registry.add_plugin(_SpyPlugin(), name="spy-plugin")
    _Spy.seen = []
    try:
        _, f = _single_and_fleet("trace times, tight pool", "spy", replicas=3)
    finally:
        router_registry.remove_plugin("spy-plugin")
    assert len(_Spy.seen) == f.requests
    # queued prefill is seen while requests wait, and is gone once every prefill ended
    assert any(p > 0 for row in _Spy.seen for p, _ in row)
    assert any(w > 0 for row in _Spy.seen for _, w in row)


def test_a_feed_keeps_arrival_order_when_a_request_is_released_late():
    from radix_evict.sim.fleet.server import Feed

    feed = Feed(0, lambda *a: None)
    reqs = unique_requests(5, rate=1.0, seed=0)
    for req, t in zip(reqs, (1.0, 3.0, 2.0, 3.0, 0.5), strict=True):
        feed.push(req, t)
    order = []
    while feed.next_time() < float("inf"):
        order.append((feed.next_time(), feed.pop().rid))
    assert order == [(0.5, "q4"), (1.0, "q0"), (2.0, "q2"), (3.0, "q1"), (3.0, "q3")]
