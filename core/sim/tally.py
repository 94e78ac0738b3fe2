"""A replay's counters, kept outside its timed regions: hits, admissions, tiers, a timeline.

One :class:`Tally` per replay records every request's outcome as it
arrives (the harness's Tally, plus hit figures per priority tier and per
request kind, and a windowed hit rate over time for plots).
"""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np

from radix_evict.sim.results import RequestRecord, TierStats, TimelinePoint
from radix_evict.sim.workloads import Request

TierKey = TypeVar("TierKey", int, str)  # a priority, or a request kind

def _tier(table: dict[TierKey, TierStats], key: TierKey) -> TierStats:
    """The figures of one priority tier or request kind, started on first use."""
    t = table.get(key)
    if t is None:
        t = table[key] = TierStats(str(key))
    return t

class Tally:
    """Counters kept outside the timed regions (the harness's Tally, plus tiers)."""

    def __init__(self, total: int, points: int, keep: bool) -> None:
        self.records: list[RequestRecord] | None = [] if keep else None
        self.hits = self.prompts = 0
        self.host_hits = 0  # of self.hits, the tokens loaded back from a host tier
        self.copy_wait_s = 0.0  # virtual seconds a timed server waited for host copies
        self.uncached: list[int] = []
        self.admitted = self.failed = 0
        self.evicted = self.evict_calls = 0
        self.tiers: dict[int, TierStats] = {}
        self.kinds: dict[str, TierStats] = {}
        self.window = max(1, math.ceil(total / points)) if points > 0 else 0
        self.win_prompt = self.win_hit = self.win_n = 0
        self.timeline: list[TimelinePoint] = []

    def record(self, req: Request, plen: int, hit: int, now: float, admitted: bool) -> None:
        prio, kind = req.priority, req.kind
        if self.records is not None:
            self.records.append(RequestRecord(req.rid, now, prio, kind, plen, hit, admitted))
        if admitted:
            self.admitted += 1
        else:
            self.failed += 1
        self.hits += hit
        self.prompts += plen
        self.uncached.append(plen - hit)
        for t in (_tier(self.tiers, prio), _tier(self.kinds, kind)):
            t.requests += 1
            t.prompt_tokens += plen
            t.hit_tokens += hit
        if self.window:
            self.win_prompt += plen
            self.win_hit += hit
            self.win_n += 1
            if self.win_n >= self.window:
                self.flush(now)

    def flush(self, now: float) -> None:
        if not self.win_n:
            return
        self.timeline.append(
            TimelinePoint(
                requests=self.admitted + self.failed,
                time_s=now,
                hit_rate=self.win_hit / self.win_prompt if self.win_prompt else 0.0,
                cumulative_hit_rate=self.hits / self.prompts if self.prompts else 0.0,
            )
        )
        self.win_prompt = self.win_hit = self.win_n = 0

    def percentiles(self) -> tuple[float, float, float, float]:
        if not self.uncached:
            return 0.0, 0.0, 0.0, 0.0
        u = np.asarray(self.uncached)
        p50, p90, p99 = (float(np.percentile(u, q)) for q in (50, 90, 99))
        return p50, p90, p99, float(u.mean())


