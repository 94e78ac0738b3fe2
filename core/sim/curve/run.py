"""The lru pool-size curve: one pass for every size, a per-size replay where it cannot stand.

:func:`pool_curve` rounds the sizes to whole pages as the replay does, runs
the one-pass stack (:mod:`radix_evict.sim.curve.stack`) over them, and
replays on its own (``replay(workload, "lru", pool_tokens=S, page_size=P)``)
each size the pass marked inexact, so every point equals the per-size
replay's figures; ``source`` says which way each point came.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from radix_evict.cache.args import check_int
from radix_evict.sim.curve.model import StackPass
from radix_evict.sim.curve.stack import stack_pass
from radix_evict.sim.replay import ReplayResult, replay
from radix_evict.sim.workloads import Workload

CURVE = "curve"  # a point's source: the one pass
REPLAY = "replay"  # a point's source: its own replay (the pass marked the size inexact)
POLICY = "lru"  # the one policy the curve is for (see the package docstring)


@dataclass(frozen=True)
class CurvePoint:
    """One pool size's figures, as ``replay`` reports them, and where they came from."""

    pool_tokens: int  # rounded down to whole pages
    requests: int
    failed: int
    prompt_tokens: int
    hit_tokens: int
    hit_rate: float
    p50_uncached: float
    p90_uncached: float
    p99_uncached: float
    mean_uncached: float
    evicted_tokens: int
    evict_calls: int
    source: str  # CURVE or REPLAY
    inexact: str | None  # why the pass could not stand for this size (REPLAY points)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PoolCurve:
    """The lru curve of one workload at one page size, smallest pool first."""

    workload: str
    page_size: int
    points: list[CurvePoint]
    pass_s: float  # wall seconds of the one pass
    replay_s: float  # wall seconds of the per-size replays it fell back on

    def point(self, pool_tokens: int) -> CurvePoint:
        """The point of ``pool_tokens`` (rounded down to whole pages as the replay does)."""
        want = pool_tokens // self.page_size * self.page_size
        for p in self.points:
            if p.pool_tokens == want:
                return p
        raise KeyError(f"pool of {pool_tokens:,} tokens is not on this curve")

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "page_size": self.page_size,
                "points": [p.to_dict() for p in self.points], "pass_s": self.pass_s,
                "replay_s": self.replay_s}


def round_sizes(pool_sizes: Sequence[int], page_size: int) -> list[int]:
    """Distinct pool sizes rounded down to whole pages, ascending; a clear error for a bad one."""
    P = check_int("page_size", page_size, 1)
    if not pool_sizes:
        raise ValueError("pool_sizes: give at least one pool size")
    out = set()
    for s in pool_sizes:
        n = check_int("pool size", s, 1)
        if n // P == 0:
            raise ValueError(f"pool of {n} tokens holds no whole page of {P}")
        out.add(n // P * P)
    return sorted(out)


def _point(sp: StackPass, c: int) -> CurvePoint:
    hits = sp.hits[:, c]
    prompts = int(sp.prompts.sum())
    hit = int(hits.sum())
    u = sp.prompts - hits
    if len(u):
        p50, p90, p99 = (float(np.percentile(u, q)) for q in (50, 90, 99))
        mean = float(u.mean())
    else:
        p50 = p90 = p99 = mean = 0.0
    return CurvePoint(sp.sizes[c], len(u), 0, prompts, hit, hit / prompts if prompts else 0.0,
                      p50, p90, p99, mean, sp.evicted[c], sp.evict_calls[c], CURVE, None)


def replay_point(result: ReplayResult, why: str | None) -> CurvePoint:
    """A per-size replay's figures as a curve point (source REPLAY)."""
    return CurvePoint(result.pool_tokens, result.requests, result.failed, result.prompt_tokens,
                      result.hit_tokens, result.hit_rate, result.p50_uncached,
                      result.p90_uncached, result.p99_uncached, result.mean_uncached,
                      result.evicted_tokens, result.evict_calls, REPLAY, why)


def pool_curve(workload: Workload, pool_sizes: Sequence[int], page_size: int = 1, *,
               fallback: bool = True,
               progress: Callable[[str], None] | None = None) -> PoolCurve:
    """The lru hit-rate curve of ``workload`` at ``pool_sizes`` from one replay.

    Each point equals ``replay(workload, "lru", pool_tokens=S, page_size=P)``'s
    figures (timings aside). Sizes the pass cannot account for exactly are
    replayed on their own (``fallback=False`` keeps the pass's figures and
    the reason instead). ``progress(message)`` hears of each fallback.
    """
    sizes = round_sizes(pool_sizes, page_size)
    t0 = time.perf_counter()
    sp = stack_pass(workload, sizes, page_size)
    pass_s = time.perf_counter() - t0
    points: list[CurvePoint] = []
    t1 = time.perf_counter()
    for c, size in enumerate(sizes):
        why = sp.inexact[c]
        if why is None or not fallback:
            pt = _point(sp, c)
            points.append(pt if why is None else CurvePoint(**{**asdict(pt), "inexact": why}))
            continue
        if progress is not None:
            progress(f"pool {size:,}: {why}; replaying it on its own")
        r = replay(workload, POLICY, pool_tokens=size, page_size=page_size, timeline_points=0,
                   workload_info={})
        points.append(replay_point(r, why))
    return PoolCurve(workload.name, page_size, points, pass_s, time.perf_counter() - t1)
