"""When requests reach the timed replay's server: trace times, Poisson, closed loop, sessions.

The server pulls arrivals in time order (:meth:`Arrivals.next_time`,
:meth:`Arrivals.pop`) and reports each request's end (:meth:`Arrivals.done`),
because in a multi-turn workload the next turn is written after the answer
comes back: its arrival depends on the simulated finish, not on the
workload's fixed service time. Four ways in, chosen by :class:`ArrivalSpec`:

- a trace's own timestamps (shifted so the first request arrives at 0);
- the workload's own session starts and think times;
- ``rate``: Poisson arrivals, seeded: R requests per second for a trace, and
  for a session workload new sessions at ``R * sessions / requests`` per
  second, so about R requests per second are offered;
- ``concurrency``: a closed loop of N clients; a client sends its next
  request (trace) or starts its next session (workload) when the last ends.

``time_scale`` multiplies every gap (inter-arrival and think times): 2 replays
at half speed, 0.5 at double speed.
"""

from __future__ import annotations

import heapq
import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from radix_evict.sim.timed.limits import MAX_TIME_SCALE, MIN_RATE, TimedInputError
from radix_evict.sim.workloads import Request, Workload
from radix_evict.sim.workloads.base import SessionWorkload

__all__ = ["ArrivalSpec", "Arrivals", "SessionArrivals", "StreamArrivals", "arrivals_for"]


@dataclass(frozen=True)
class ArrivalSpec:
    """How requests arrive; the default replays the workload's or trace's own times."""

    rate: float | None = None
    concurrency: int | None = None
    time_scale: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rate is not None and self.concurrency is not None:
            raise ValueError("give a rate or a concurrency, not both")
        if self.rate is not None and not (self.rate >= MIN_RATE and math.isfinite(self.rate)):
            raise TimedInputError(
                "rate", f"rate must be a positive number of requests per second, finite and "
                        f"at least {MIN_RATE:g} (slower arrivals outrun the virtual clock's "
                        f"precision), got {self.rate!r}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency!r}")
        if not (0 < self.time_scale <= MAX_TIME_SCALE):
            raise TimedInputError(
                "time_scale", f"time_scale must be positive and at most {MAX_TIME_SCALE:g} "
                              "(larger stretches outrun the virtual clock's precision), got "
                              f"{self.time_scale!r}")

    def describe(self) -> dict[str, object]:
        mode = ("closed loop" if self.concurrency is not None
                else "poisson" if self.rate is not None else "recorded")
        return {"mode": mode, "rate": self.rate, "concurrency": self.concurrency,
                "time_scale": self.time_scale, "seed": self.seed}


class Arrivals(ABC):
    """Requests in arrival order; ``done`` lets a finished request release the next one."""

    @abstractmethod
    def next_time(self) -> float:
        """When the next request arrives (``inf`` when none is due yet, or none is left)."""

    @abstractmethod
    def pop(self) -> Request:
        """The next request, its ``arrival`` set to :meth:`next_time`."""

    def done(self, req: Request, t: float) -> None:  # noqa: B027 - most sources ignore it
        """``req`` finished (or was refused) at time ``t``."""


class StreamArrivals(Arrivals):
    """Independent requests in the workload's order (a trace, or any non-session workload)."""

    def __init__(self, requests: Iterator[Request], spec: ArrivalSpec, total: int) -> None:
        self._requests = requests
        self._spec = spec
        self._rng = np.random.default_rng(spec.seed)
        self._next: Request | None = next(self._requests, None)
        self._origin = self._next.arrival if self._next is not None else 0.0
        self._clock = 0.0  # Poisson: the last arrival's time
        self._released: deque[float] = deque()  # closed loop: times a client became free
        if spec.concurrency is not None:
            self._released.extend([0.0] * min(spec.concurrency, total))
        self._t = self._time_of_next()

    def _time_of_next(self) -> float:
        if self._next is None:
            return math.inf
        spec = self._spec
        if spec.concurrency is not None:
            return self._released[0] if self._released else math.inf
        if spec.rate is not None:
            return self._clock + float(self._rng.exponential(1.0 / spec.rate)) * spec.time_scale
        return (self._next.arrival - self._origin) * spec.time_scale

    def next_time(self) -> float:
        if self._t == math.inf and self._next is not None and self._released:
            self._t = self._released[0]
        return self._t

    def pop(self) -> Request:
        req, t = self._next, self.next_time()
        assert req is not None and t < math.inf
        if self._spec.concurrency is not None:
            self._released.popleft()
        self._clock = t
        self._next = next(self._requests, None)
        self._t = self._time_of_next()
        return _at(req, t)

    def done(self, req: Request, t: float) -> None:
        if self._spec.concurrency is not None:
            self._released.append(t)
            if self._t == math.inf and self._next is not None:
                self._t = self._released[0]


class SessionArrivals(Arrivals):
    """A session workload: each turn arrives ``think`` after its previous turn finished."""

    def __init__(self, workload: SessionWorkload, spec: ArrivalSpec) -> None:
        self._w = workload
        self._spec = spec
        self._heap: list[tuple[float, int, int, int]] = []  # time, seq, session, turn
        self._history: dict[int, np.ndarray] = {}
        self._seq = 0
        sessions = workload.sessions
        n = len(sessions)
        self._unstarted = deque(range(n))
        if spec.concurrency is not None:
            for _ in range(min(spec.concurrency, n)):
                self._start(self._unstarted.popleft(), 0.0)
        elif spec.rate is not None:
            rng = np.random.default_rng(spec.seed)
            per_session = spec.rate * n / max(1, workload.num_requests)
            gaps = rng.exponential(1.0 / per_session, size=n) * spec.time_scale
            t = 0.0
            for si, gap in zip(range(n), gaps, strict=True):
                t += float(gap)
                self._start(si, t)
            self._unstarted.clear()
        else:
            origin = min((s.start for s in sessions), default=0.0)
            for si, s in enumerate(sessions):
                self._start(si, (s.start - origin) * spec.time_scale)
            self._unstarted.clear()

    def _start(self, si: int, t: float) -> None:
        if not self._w.sessions[si].turns:
            return
        self._push(t, si, 0)

    def _push(self, t: float, si: int, ti: int) -> None:
        heapq.heappush(self._heap, (t, self._seq, si, ti))
        self._seq += 1

    def next_time(self) -> float:
        return self._heap[0][0] if self._heap else math.inf

    def pop(self) -> Request:
        t, _, si, ti = heapq.heappop(self._heap)
        history = self._history.pop(si) if ti else self._w.sessions[si].prefix
        return self._w.turn_request(si, ti, history, t)

    def done(self, req: Request, t: float) -> None:
        si, ti = req.session, req.turn
        turns = self._w.sessions[si].turns
        if ti + 1 < len(turns):
            self._history[si] = req.tokens()
            self._push(t + turns[ti].think * self._spec.time_scale, si, ti + 1)
        elif self._spec.concurrency is not None and self._unstarted:
            self._start(self._unstarted.popleft(), t)


def _at(req: Request, t: float) -> Request:
    """``req`` with its arrival time set to ``t``."""
    if req.arrival == t:
        return req
    return Request(req.rid, req.prompt, req.output, req.priority, t, req.session, req.turn,
                   req.kind, req.full)


def arrivals_for(workload: Workload, spec: ArrivalSpec) -> Arrivals:
    """The arrival source ``spec`` asks for, over ``workload``'s requests."""
    if isinstance(workload, SessionWorkload):
        return SessionArrivals(workload, spec)
    return StreamArrivals(workload.requests(), spec, workload.num_requests)
