"""A fleet cell's replay and row: N timed servers behind a router, one row for the fleet.

The row has a timed row's columns (over every request of the fleet), the
fleet's point (``replicas``, ``router``, ``router_config``) and its own
figures: ``gpu_hours`` (replicas x the workload's makespan) and the load
balance (max over mean requests and prompt tokens per replica). The
uncached-token percentiles are over the requests served, as the
single-server replay's are; ``evicted_tokens`` sums the replicas'.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.curve import REPLAY
from radix_evict.sim.sweep.cell import Cell
from radix_evict.sim.sweep.rows import timed_figures
from radix_evict.sim.sweep.schema import OK
from radix_evict.sim.workloads import Workload

__all__ = ["fleet_figures", "run_fleet_cell"]


def fleet_figures(result: Any) -> dict[str, Any]:
    """A FleetResult's columns: the token figures, the timed ones, the fleet's own."""
    served = [r for r in result.records if r.refused is None]
    uncached = np.asarray([r.prompt_tokens - r.hit_tokens for r in served], dtype=np.float64)
    p50, p90, p99 = ((float(np.percentile(uncached, q)) for q in (50, 90, 99))
                     if uncached.size else (0.0, 0.0, 0.0))
    f = result.fleet
    return {
        "requests": result.requests, "hit_rate": result.hit_rate,
        "p50_uncached": p50, "p90_uncached": p90, "p99_uncached": p99,
        "mean_uncached": float(uncached.mean()) if uncached.size else 0.0,
        "evicted_tokens": sum(r.evicted_tokens for r in result.per_replica),
        "failed_admissions": f.refused, **timed_figures(f), "gpu_hours": result.gpu_hours,
        "balance_requests": result.balance.requests_max_over_mean,
        "balance_tokens": result.balance.tokens_max_over_mean,
    }


def run_fleet_cell(cell: Cell, workload: Workload, base: dict[str, Any],
                   progress: Any = None) -> dict[str, Any]:
    """Replay a fleet cell (errors propagate: the caller makes them rows); ``base`` is its
    row with the coordinates filled in."""
    from radix_evict.sim.fleet.hybrid import replay_hybrid_fleet
    from radix_evict.sim.fleet.replay import replay_fleet
    from radix_evict.sim.sweep.hybrid_cell import pool_figures

    assert cell.fleet is not None and cell.timing is not None
    t0 = time.perf_counter()
    pool = cell.pool_tokens if cell.pool_tokens is not None else workload.default_pool_tokens
    timing = cell.timing_spec()
    assert timing is not None
    run, fleet = PolicyRun(cell.policy, cell.config), cell.fleet.spec(cell.seed)
    row = dict(base)
    if cell.hybrid is None:
        result = replay_fleet(workload, run, pool_tokens=pool, page_size=cell.page_size,
                              timing=timing, fleet=fleet, host=cell.host_spec(),
                              progress=progress)
    else:  # each replica on the model's cache, its KV memory each (sim.fleet.hybrid)
        spec = cell.hybrid.spec(cell.pool_tokens, workload.default_pool_tokens, cell.page_size)
        result = replay_hybrid_fleet(workload, run, spec, timing=timing, fleet=fleet,
                                     host=cell.host_spec(), progress=progress)
        row.update(pool_figures(spec), full_hit_rate=result.full_hit_rate)
    row.update(fleet_figures(result))
    row.update({"pool_tokens": result.pool_tokens, "via": REPLAY,
                "replay_s": time.perf_counter() - t0, "status": OK,
                "config_source": "given" if cell.config is not None else "none"})
    return row
