"""``simulate --pool-curve``: lru's curve over pool sizes, with the oracle and the ceiling.

:func:`curve_with_references` runs the lru pool-size curve
(:func:`radix_evict.sim.curve.pool_curve`: one pass for every size, a
per-size replay only where the pass stands aside) and, with ``oracle``,
Belady's offline oracle at each size and the infinite-pool ceiling. The
oracle has no inclusion property to share (its choices look at the future
and the pool's contents), so it is one replay per size; the jobs run on
worker processes side by side, the curve pass one of them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.sim.bound import replay_oracle
from radix_evict.sim.ceiling import infinite_pool_ceiling
from radix_evict.sim.curve import PoolCurve, pool_curve, round_sizes
from radix_evict.sim.parallel import ProgressFn, run_jobs
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.workloads import Workload

__all__ = ["CURVE_POLICY", "CurveRun", "curve_with_references"]

CURVE_POLICY = "lru"  # the one policy whose pool sizes nest (docs/pool-curve.md)


@dataclass(frozen=True)
class CurveRun:
    """lru's curve and, with the oracle, each size's oracle replay and the ceiling."""

    curve: PoolCurve
    oracle: tuple[ReplayResult, ...] | None  # one per point, in the curve's order
    ceiling: float | None
    curve_s: float  # wall seconds of the curve job (its pass and any per-size replays)
    wall_s: float  # wall seconds of everything (the jobs side by side)

    def to_dict(self) -> dict[str, Any]:
        points = []
        for i, p in enumerate(self.curve.points):
            d = p.to_dict()
            if self.oracle is not None:
                d["oracle_hit_rate"] = self.oracle[i].hit_rate
            points.append(d)
        return {"policy": CURVE_POLICY, "workload": self.curve.workload,
                "page_size": self.curve.page_size, "points": points,
                "ceiling_hit_rate": self.ceiling, "pass_s": self.curve.pass_s,
                "replay_s": self.curve.replay_s, "curve_s": self.curve_s,
                "wall_s": self.wall_s}


def curve_with_references(workload: Workload, pool_sizes: Sequence[int], page_size: int = 1,
                          *, oracle: bool = False, workers: int | None = None,
                          progress: ProgressFn | None = None) -> CurveRun:
    """lru at every size of ``pool_sizes`` from one pass (``oracle``: plus one oracle replay
    per size and the ceiling), on ``workers`` processes (default: planned from the cores)."""
    sizes = round_sizes(pool_sizes, page_size)
    t0 = time.perf_counter()

    def curve_job(_report: Any) -> tuple[PoolCurve, float]:
        t = time.perf_counter()
        return pool_curve(workload, sizes, page_size), time.perf_counter() - t

    jobs: list[Any] = [curve_job]
    if oracle:
        jobs.append(lambda _r: infinite_pool_ceiling(workload, page_size).hit_rate)
        jobs.extend((lambda report, s=s: replay_oracle(
            workload, pool_tokens=s, page_size=page_size, progress=report,
            timeline_points=0, workload_info={})) for s in sizes)
    n = workload.num_requests
    out = run_jobs(jobs, [n] * len(jobs), workers, progress)
    curve, curve_s = out[0]
    return CurveRun(curve, tuple(out[2:]) if oracle else None, out[1] if oracle else None,
                    curve_s, time.perf_counter() - t0)
