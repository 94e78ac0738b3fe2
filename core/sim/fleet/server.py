"""A timed server the fleet steps from outside, the requests routed to it, and the router's view.

:class:`Replica` is today's :class:`~radix_evict.sim.timed.server.Server`
fed by a :class:`Feed`: the requests the router sent it, in arrival order.
Its ``run`` is never called: the fleet (:mod:`radix_evict.sim.fleet.replay`)
polls each replica when the shared clock reaches it, and :meth:`Replica.poll`
is one pass of ``run``'s loop, written again here (the one-server loop stays
as fast as it was; tests/sim/fleet hold the two equal, a fleet of one
against the one-server replay). Its own additions are bookkeeping only: the
router's in-flight count and the prefill load its view reports.

One step needs care. A decode segment that could admit the next arrival
stops there (``decode.py``), and which replica the next arrival goes to is
not known until it arrives. Such a segment waits (``pending``) until either
an arrival is routed to this replica (then it runs, cut at that arrival, as
the one-server loop would have cut it) or the clock passes the segment's
uncut end (no arrival came: it runs whole). Nothing else happens on that
replica meanwhile, so it runs on the state it would have run on: a fleet of
one gives exactly the one-server figures, and a replica costs nothing per
arrival it is not sent.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable, Sequence

from radix_evict.cache.tree import TokenKey
from radix_evict.sim.timed.arrivals import Arrivals
from radix_evict.sim.timed.job import Job
from radix_evict.sim.timed.scheduler import INIT_NEW_TOKEN_RATIO
from radix_evict.sim.timed.server import Server
from radix_evict.sim.workloads import Request

__all__ = ["Feed", "Replica", "ReplicaView"]

DoneFn = Callable[[int, Request, float], None]


class Feed(Arrivals):
    """The requests routed to one replica, in arrival order; a finish goes back to the fleet."""

    __slots__ = ("_done", "index", "queue")

    def __init__(self, index: int, done: DoneFn) -> None:
        self.index = index
        self.queue: deque[tuple[float, Request]] = deque()
        self._done = done

    def push(self, req: Request, t: float) -> None:
        q = self.queue
        if not q or q[-1][0] <= t:
            q.append((t, req))
            return
        # released late (a finish told after a later arrival was routed): keep time order
        i = len(q)
        while i > 0 and q[i - 1][0] > t:
            i -= 1
        q.insert(i, (t, req))

    def next_time(self) -> float:
        return self.queue[0][0] if self.queue else math.inf

    def pop(self) -> Request:
        return self.queue.popleft()[1]

    def done(self, req: Request, t: float) -> None:
        self._done(self.index, req, t)


class Replica(Server):
    """One replica: a timed server polled by the fleet (:meth:`poll`), fed by a :class:`Feed`."""

    index: int
    feed: Feed
    pending: bool  # a decode segment waits to learn its next arrival (module docstring)
    idle: bool  # nothing to do until a request is routed here
    gen: int  # bumped when its place on the fleet's clock changes (stale entries skipped)
    in_flight: int  # routed here and not yet finished (the router's count)
    routed: int
    # Dynamo's prefill load: the uncached prompt tokens of the requests routed here whose
    # prefill has not finished, each estimated once (on the cache of the first question
    # after it was routed), dropped at its first token or refusal
    prefill_load: int
    unprefilled: dict[int, int]  # id(request) -> its estimate (-1: not estimated yet)
    unestimated: list[Request]

    def attach(self, index: int, feed: Feed) -> None:
        self.index, self.feed = index, feed
        self.pending = self.idle = False
        self.gen = self.in_flight = self.routed = self.prefill_load = 0
        self.unprefilled, self.unestimated = {}, []

    def take(self, req: Request, t: float) -> None:
        """A request routed here at ``t``: queued on its feed, counted as prefill to come."""
        self.in_flight += 1
        self.routed += 1
        self.feed.push(req, t)
        self.unprefilled[id(req)] = -1
        self.unestimated.append(req)

    def pending_prefill(self) -> int:
        """:attr:`prefill_load`, the requests not yet estimated estimated now."""
        if self.unestimated:
            cached, pending = self.cached_prefix, self.unprefilled
            for req in self.unestimated:
                if pending.get(id(req)) == -1:
                    est = len(req.prompt) - cached(req.prompt)
                    pending[id(req)] = est
                    self.prefill_load += est
            self.unestimated.clear()
        return self.prefill_load

    def cached_prefix(self, key: TokenKey) -> int:
        """Tokens of ``key``'s page-aligned prefix in its device cache, read without a use
        (a hybrid replica reads its tree's reusable prefix: ``sim.fleet.hybrid``)."""
        return self.cache.locate(key)[0]

    def _prefilled(self, req: Request) -> None:
        est = self.unprefilled.pop(id(req), None)
        if est is not None and est > 0:
            self.prefill_load -= est

    def _prefill(self, batch: list[Job]) -> None:
        super()._prefill(batch)
        for job in batch:
            if job.first_token >= 0:
                self._prefilled(job.req)

    def _refuse(self, job: Job, why: str) -> None:
        super()._refuse(job, why)
        self._prefilled(job.req)

    def poll(self) -> float | None:
        """One pass of the server's loop at ``now``: the time it must be polled again, or
        None when it is idle (every request routed here by ``now`` is absorbed first)."""
        n = len(self.records)
        self._absorb_arrivals()
        if len(self.records) != n:
            # a refusal's finish may release an arrival at this very time (a closed loop):
            # come back once the fleet has routed it, as the one-server loop absorbs it now
            return self.now
        if self.chunked is not None or (self.waiting and not self.blocked):
            batch = self._form_prefill_batch()
            if batch:
                self._prefill(batch)
                return self.now
            if not self.running:
                raise AssertionError("the queue's head cannot be admitted to an idle server")
        if self.running:
            if (not self.blocked and not self.waiting and self.chunked is None
                    and self.feed.next_time() == math.inf):
                self.pending = True
                return self.now + self._uncut_decode_s()
            self._decode()
            return self.now
        t_next = self.feed.next_time()
        if t_next == math.inf:
            self.idle = True
            return None
        self.now = max(self.now, t_next)
        self.ratio = INIT_NEW_TOKEN_RATIO  # SGLang resets it when fully idle
        return self.now

    def _uncut_decode_s(self) -> float:
        """Seconds the waiting decode segment takes if no arrival cuts it (its compute)."""
        n = len(self.running)
        steps = self.finishes[0][0] - self.step
        return self.cost.decode_ms(n, n * self.step + self.sum_offset, steps) / 1e3

    def run_pending(self) -> float:
        """Run the waiting decode segment (cut at the feed's next arrival, if any)."""
        self.pending = False
        self._decode()
        return self.now

    def wake(self, t: float) -> float:
        """A request was routed to this idle replica at ``t``: the loop's idle jump."""
        self.idle = False
        self.now = max(self.now, t)
        self.ratio = INIT_NEW_TOKEN_RATIO
        return self.now


class ReplicaView:
    """A router's read-only view of one replica (a :class:`~.router.ReplicaState`).

    Queue and cache are read as of the replica's last step (a step is atomic,
    as a scheduler iteration is); ``in_flight`` is the router's own count,
    exact at the arrival being routed.
    """

    __slots__ = ("_r",)

    def __init__(self, replica: Replica) -> None:
        self._r = replica

    @property
    def index(self) -> int:
        return self._r.index

    @property
    def in_flight(self) -> int:
        return self._r.in_flight

    @property
    def waiting(self) -> int:
        """Queued and not admitted: its queue, and requests routed but not yet absorbed."""
        r = self._r
        return len(r.waiting) + len(r.feed.queue)

    @property
    def running(self) -> int:
        """Decoding, and a chunked prefill under way."""
        r = self._r
        return len(r.running) + (r.chunked is not None)

    @property
    def pending_prefill_tokens(self) -> int:
        """Uncached prompt tokens of the requests routed to it that have not had their first
        token: each request's prompt less its cached prefix, estimated once, as Dynamo's
        active-sequence tracker charges a request's new tokens until its prefill ends."""
        return self._r.pending_prefill()

    @property
    def active_kv_tokens(self) -> int:
        """Tokens of KV its running requests hold (a chunked prefill's computed part too)."""
        r = self._r
        held = len(r.running) * r.step + r.sum_offset
        return held + (r.chunked.prefilled if r.chunked is not None else 0)

    def cached_prefix(self, key: Sequence[Hashable]) -> int:
        """Tokens of ``key``'s page-aligned prefix in its device cache, read without a use
        (to the start of the node a partial match ends in)."""
        return self._r.cached_prefix(key)  # type: ignore[arg-type]  # the prompt's array
