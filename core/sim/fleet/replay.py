"""``replay_fleet``: N timed servers on one virtual clock, a router choosing for each arrival.

Each replica is today's timed server (:mod:`radix_evict.sim.timed`) with its
own pool, cache, policy and host tier; the workload's arrivals come from one
source (trace times, Poisson, closed loop or sessions, as in the one-server
replay), and each is routed when it arrives. Events are taken in time order
from three heaps: finishes (told to the arrival source, which may release a
session's next turn, and to the router), arrivals (routed), and replicas
(polled when the clock reaches them). At equal times finishes go first, then
arrivals, then replicas, which is the one-server loop's order: a fleet of
one replica gives exactly its figures, whatever the router.

The work is per request, not per replica: a replica is touched only when
the clock reaches its next step or a request is routed to it
(:mod:`radix_evict.sim.fleet.server` says how a decode segment waits for
its next arrival without a step per arrival on every replica).
"""

from __future__ import annotations

import heapq
import math
import numbers
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.configs import PolicyRun, RunConfig
from radix_evict.sim.fleet.errors import FleetRouterError
from radix_evict.sim.fleet.figures import FleetResult, fleet_result
from radix_evict.sim.fleet.registry import build_router
from radix_evict.sim.fleet.router import RoutedRequest, Router
from radix_evict.sim.fleet.server import Feed, Replica, ReplicaView
from radix_evict.sim.replay import (  # the one-server replay's own set-up and final check
    _check_accounting,
    _set_up,
    contexts_for,
)
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.arrivals import Arrivals, arrivals_for
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Request, Workload

__all__ = ["FleetSpec", "ReplicaMaker", "replay_fleet", "run_fleet"]

ProgressFn = Callable[[int, int], None]
PROGRESS_STEPS = 200


@dataclass(frozen=True)
class FleetSpec:
    """How many replicas, and the router in front of them (its config checked strictly)."""

    replicas: int
    router: str = "round_robin"
    router_config: Mapping[str, Any] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or (
                self.replicas < 1):
            raise ValueError(f"replicas must be an integer >= 1, got {self.replicas!r}")

    def describe(self) -> dict[str, Any]:
        return {"replicas": self.replicas, "router": self.router,
                "router_config": dict(self.router_config or {}), "seed": self.seed}


class _Fleet:
    """The shared clock: replicas, the arrival source, the router and the three heaps."""

    def __init__(self, workload: Workload, replicas: ReplicaMaker, count: int,
                 timing: TimingSpec, router: Router, progress: ProgressFn | None) -> None:
        self.router, self.progress = router, progress
        self.total = workload.num_requests
        self.every = max(1, self.total // PROGRESS_STEPS)
        self.source: Arrivals = arrivals_for(workload, timing.arrivals)
        self.finishes: list[tuple[float, int, int, Request]] = []  # time, seq, replica, req
        self.clock: list[tuple[float, int, int]] = []  # key, gen, replica
        self.seq = 0
        self.done = self.arrived = 0
        self.routed: dict[int, tuple[RoutedRequest, Request]] = {}  # by id(request), till done
        self.replicas: list[Replica] = []
        for i in range(count):
            feed = Feed(i, self._finished)
            r = replicas.replica(i, feed)
            r.attach(i, feed)
            r.idle = True
            self.replicas.append(r)
        self.views = [ReplicaView(r) for r in self.replicas]
        self.t_route = 0.0  # CPU seconds in the router

    def _finished(self, index: int, req: Request, t: float) -> None:
        heapq.heappush(self.finishes, (t, self.seq, index, req))
        self.seq += 1

    def _schedule(self, r: Replica, key: float | None) -> None:
        r.gen += 1
        if key is not None:
            heapq.heappush(self.clock, (key, r.gen, r.index))

    def run(self) -> None:
        """Every event in time order (finishes, then arrivals, then replicas, at equal times)."""
        finishes, clock, source, replicas = self.finishes, self.clock, self.source, self.replicas
        inf = math.inf
        while True:
            t_f = finishes[0][0] if finishes else inf
            t_a = source.next_time()
            t_r = clock[0][0] if clock else inf
            if t_f <= t_a and t_f <= t_r:
                if t_f == inf:
                    return
                self._deliver(*heapq.heappop(finishes))
            elif t_a <= t_r:
                self._route(source.pop(), t_a)
            else:
                _, gen, i = heapq.heappop(clock)
                r = replicas[i]
                if gen != r.gen:
                    continue  # superseded: it was rescheduled since
                self._schedule(r, r.run_pending() if r.pending else r.poll())

    def _deliver(self, t: float, _seq: int, index: int, req: Request) -> None:
        """A request finished (or was refused) at ``t``: tell the source and the router."""
        self.replicas[index].in_flight -= 1
        self.source.done(req, t)
        routed = self.routed.pop(id(req))[0]
        try:
            self.router.on_finish(routed, index)
        except Exception as exc:
            raise FleetRouterError(
                f"router {self.router.name!r} raised in on_finish for request {routed.rid} "
                f"({req.rid}) on replica {index}: {type(exc).__name__}: {exc}") from exc
        self.done += 1
        if self.progress is not None and self.done % self.every == 0:
            self.progress(self.done, self.total)

    def _route(self, req: Request, t: float) -> None:
        """Ask the router, check its answer, hand the request to that replica."""
        n = self.arrived
        self.arrived += 1
        key = cast(Sequence[Hashable], req.prompt)  # the token array itself: no copy
        rr = RoutedRequest(n, t, key, req.session, len(req.prompt), len(req.output))
        t0 = time.thread_time()
        try:
            i = self.router.route(rr, self.views)
        except Exception as exc:
            raise FleetRouterError(
                f"router {self.router.name!r} raised for request {n} ({req.rid}): "
                f"{type(exc).__name__}: {exc}") from exc
        self.t_route += time.thread_time() - t0
        index = i if type(i) is int and 0 <= i < len(self.replicas) else _index(i, self.replicas)
        if index is None:
            raise FleetRouterError(
                f"router {self.router.name!r} chose replica {i!r} for request {n} ({req.rid}); "
                f"the fleet has replicas 0..{len(self.replicas) - 1}")
        self.routed[id(req)] = (rr, req)
        r = self.replicas[index]
        r.take(req, t)
        if r.pending:  # its decode segment waited for this: it runs now, cut here
            self._schedule(r, r.run_pending())
        elif r.idle:
            self._schedule(r, r.wake(t))


def _index(value: object, replicas: list[Replica]) -> int | None:
    """A router's answer as a replica's index: an integer of any kind (numpy's too) in
    range, else None (a bool is no index)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    i = int(value)
    return i if 0 <= i < len(replicas) else None


class ReplicaMaker(Protocol):
    """How a fleet's replicas are built and checked (each its own cache), and what the
    figures say of them: plain caches here, a hybrid model's in ``sim.fleet.hybrid``."""

    run_config: RunConfig  # what each replica's policy runs with
    pool_size: int  # tokens per replica (a hybrid cache's: its full-attention pool)
    page_size: int

    def replica(self, index: int, feed: Feed) -> Replica: ...

    def check(self, index: int) -> None:
        """The one-server replay's end-of-replay accounting, on replica ``index``'s cache."""

    def full_hit_tokens(self) -> int | None:
        """What full-attention KV alone covered over every replica (None: no hybrid cache)."""


class _PlainReplicas:
    """Each replica a timed server on a plain ``RadixCache`` (``sim.replay._set_up``)."""

    def __init__(self, workload: Workload, run: PolicyRun, count: int, *, pool_tokens: int,
                 page_size: int, timing: TimingSpec, host: HostTierSpec | None) -> None:
        config = run.on(workload)  # resolved (or derived from the workload) once, not per replica
        self.setups = [_set_up(workload, run, config, pool_tokens, page_size, host)
                       for _ in range(count)]
        self.workload, self.timing = workload, timing
        s = self.setups[0]
        self.run_config, self.pool_size, self.page_size = s.run_config, s.pool_size, s.page_size

    def replica(self, index: int, feed: Feed) -> Replica:
        s, wl, timing = self.setups[index], self.workload, self.timing
        return Replica(s.cache, s.pool, s.page_size, timing.cost_model, feed, timing.scheduler,
                       Tally(wl.num_requests, 0, False), workload=wl.name,
                       contexts=contexts_for(wl, s.cache))

    def check(self, index: int) -> None:
        s = self.setups[index]
        _check_accounting(s.cache, s.pool, s.pool_size)

    def full_hit_tokens(self) -> int | None:
        return None


def replay_fleet(workload: Workload, run: PolicyRun, *, pool_tokens: int, page_size: int,
                 timing: TimingSpec, fleet: FleetSpec, host: HostTierSpec | None = None,
                 progress: ProgressFn | None = None) -> FleetResult:
    """Replay ``workload`` on ``fleet.replicas`` timed servers behind ``fleet.router``.

    Each replica has a pool of ``pool_tokens`` (rounded down to pages), its
    own cache under ``run``'s policy, and ``host`` (a host tier each). The
    router (``fleet.router_config`` validated strictly: RouterConfigError
    names the key) picks a replica as each request arrives; a router that
    raises or picks no replica fails with FleetRouterError naming it, the
    request and the value. ReplayError if a replica ends with a lock held or
    a slot unaccounted for.
    """
    router = build_router(fleet.router, fleet.router_config, replicas=fleet.replicas,
                          seed=fleet.seed)
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    replicas = _PlainReplicas(workload, run, fleet.replicas, pool_tokens=pool_tokens,
                              page_size=page_size, timing=timing, host=host)
    return run_fleet(workload, run, replicas, timing=timing, fleet=fleet, router=router,
                     progress=progress, started=(wall0, cpu0))


def run_fleet(workload: Workload, run: PolicyRun, replicas: ReplicaMaker, *,
              timing: TimingSpec, fleet: FleetSpec, router: Router,
              progress: ProgressFn | None, started: tuple[float, float]) -> FleetResult:
    """The fleet's replay on replicas ``replicas`` builds, each checked at the end;
    ``started``: (wall, CPU) when its set-up began."""
    wall0, cpu0 = started
    f = _Fleet(workload, replicas, fleet.replicas, timing, router, progress)
    f.run()
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    for i, r in enumerate(f.replicas):
        _check_replica(r)
        replicas.check(i)
    if progress is not None:
        progress(f.done, f.total)
    return fleet_result(workload, run, fleet, timing, replicas, f.replicas, cpu_s=cpu,
                        wall_s=wall, route_s=f.t_route)


def _check_replica(r: Replica) -> None:
    """The one-server replay's end checks of its server, per replica."""
    from radix_evict.sim.replay import ReplayError

    r.tally.flush(r.now)
    if r.in_system or r.deferred or r.feed.queue or r.in_flight or r.unprefilled:
        raise ReplayError(
            f"fleet replay: replica {r.index} ended with {r.in_system} requests in the system, "
            f"{len(r.feed.queue)} routed and never absorbed, {r.in_flight} in flight, "
            f"{len(r.unprefilled)} never prefilled and {r.deferred} decode slots counted but "
            "not returned")
