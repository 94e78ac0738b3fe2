"""In the timed replay a request's context says when it arrived there (what retain reads).

A policy that converts hinted seconds to its clock (``retain``) reads
``RequestContext.arrival``; in the timed replay a session's later turns arrive
when the server has answered the turn before (closed loop), and ``time_scale``
stretches every gap, so the workload's own times would be wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

import radix_evict.sim.timed.run as timed_run
from radix_evict import EvictionPolicy, TreeNode
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload


class SeesArrivals(EvictionPolicy):
    """LRU that records (rid, arrival) of every context it is shown."""

    name = "sees-arrivals"
    uses_context = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, float] = {}

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        ctx = node.context
        if ctx is not None and ctx.rid is not None and ctx.arrival is not None:
            self.seen.setdefault(ctx.rid, ctx.arrival)


def test_context_arrival_is_the_timed_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    records: list[Any] = []
    real = timed_run.summarize

    def spy(recs: Any, **kw: Any) -> Any:
        records.extend(recs)
        return real(recs, **kw)

    monkeypatch.setattr(timed_run, "summarize", spy)
    w = get_workload("agentic", seed=0, sessions=6)
    nominal = {r.rid: r.arrival for r in w.requests()}
    policy = SeesArrivals()
    replay(w, policy, pool_tokens=50_000,
           timing=TimingSpec(arrivals=ArrivalSpec(time_scale=3.0)))
    arrived = {r.rid: r.arrival for r in records if r.refused is None}
    assert policy.seen and set(policy.seen) <= set(arrived)
    for rid, t in policy.seen.items():
        assert t == pytest.approx(arrived[rid]), rid
    # the workload's own times differ (stretched, closed loop)
    assert any(abs(nominal[rid] - t) > 1e-6 for rid, t in policy.seen.items())
