"""A 40-cell sweep on the Mooncake conversation trace: local processes vs one at a time vs Ray.

The grid: lru, lfu, slru (protected_threshold 1 and 4) and tlru (config
derived from the trace) x 8 pool sizes (250K..32M tokens, x2) = 40 cells,
on the first ``--trace-limit`` requests of the trace (default 2000: the full
12,031 take ~8 s a replay here, so the whole grid ~5 min one at a time).
The trace is read once, outside the timings. Prints wall seconds of

- ``sequential``: one worker process at a time (``-j 1``),
- ``local``: one worker per core (the default executor),
- ``ray cold`` / ``ray warm``: Ray tasks on a fresh ``ray.init(num_cpus=cores)``
  (cold: its workers import torch on their first task; warm: a second sweep),

the speedup sequential / local (close to the core count when the machine is
otherwise idle) and the Ray executor's overhead per cell against local
processes: (ray wall - local wall) x slots / cells, i.e. what each cell costs
a worker slot on top of its replay. ``ray.init`` itself is timed apart.
It also prints how many cores the worker processes held on average (their
CPU seconds over wall seconds): on a machine shared with other work the
speedup cannot exceed that. A benchmark, not a test: timings vary with the
machine and its load; the rows of every executor are checked to be equal.

    .venv/bin/python bench/bench_sweep.py [--trace-limit 2000] [--no-ray] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

from radix_evict.sim.parallel import usable_cores
from radix_evict.sim.sweep import (
    GridParts,
    comparable,
    local_executor,
    make_grid,
    plan_sweep,
    run_sweep,
)
from radix_evict.sim.sweep.run import Executor
from radix_evict.sim.sweep.sources import build_workloads

ROOT = Path(__file__).resolve().parents[1]
TRACE_NAME = "mooncake_conversation_trace.jsonl"
# The shared traces sit next to the repository (../shared), or next to the worktrees' folder.
CANDIDATES = [ROOT.parent / "shared" / "traces" / TRACE_NAME,
              ROOT.parent.parent / "shared" / "traces" / TRACE_NAME]
POOLS = [250_000 * 2**i for i in range(8)]


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=next((p for p in CANDIDATES if p.exists()),
                                                       CANDIDATES[0]))
    ap.add_argument("--trace-limit", type=int, default=2000,
                    help="replay the first N requests (0 = all 12,031)")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray executor")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args()


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _timed(plan_args: Any, executor: Executor, workloads: Any
           ) -> tuple[float, float, list[Any]]:
    """(wall s, CPU s of the worker processes it forked, rows)."""
    plan = plan_sweep(make_grid(plan_args))
    cpu0, t0 = _children_cpu(), time.perf_counter()
    # every cell its own task (no lru pool-curve groups): this bench times executors per cell
    out = run_sweep(plan, executor, workloads=workloads, curve=False)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if out.failed:
        raise SystemExit(f"cells failed: {[r['error'] for r in out.failed]}")
    return wall, cpu, out.rows


def main() -> None:
    a = _args()
    parts = GridParts(policies=["lru", "lfu", "slru", "tlru"],
                      vary={"slru": {"protected_threshold": [1, 4]}}, pool_tokens=POOLS,
                      traces=[str(a.trace)],
                      params=[("trace", "limit", a.trace_limit)] if a.trace_limit else None)
    plan = plan_sweep(make_grid(parts))
    cells = len(plan.cells)
    t0 = time.perf_counter()
    workloads = build_workloads(plan.cells)
    read_s = time.perf_counter() - t0
    cores = usable_cores()
    figures: dict[str, Any] = {"cells": cells, "cores": cores, "trace": str(a.trace),
                               "trace_limit": a.trace_limit, "trace_read_s": read_s,
                               "load_average": os.getloadavg()[0]}
    seq_s, seq_cpu, seq_rows = _timed(parts, local_executor(1), workloads)
    local_s, local_cpu, local_rows = _timed(parts, local_executor(None), workloads)
    assert [comparable(r) for r in local_rows] == [comparable(r) for r in seq_rows]
    # CPU seconds / wall seconds: how many cores the sweep's processes held on average (on a
    # machine shared with other work, the speedup can only be as high as this).
    figures.update(sequential_s=seq_s, local_s=local_s, speedup=seq_s / local_s,
                   replay_s_sum=sum(r["replay_s"] for r in seq_rows),
                   sequential_cores_held=seq_cpu / seq_s, local_cores_held=local_cpu / local_s)
    if not a.no_ray:
        import ray

        from radix_evict.sim.sweep import ray_executor

        t0 = time.perf_counter()
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
        figures["ray_init_s"] = time.perf_counter() - t0
        try:
            for run in ("cold", "warm"):
                ray_s, _, ray_rows = _timed(parts, ray_executor(), workloads)
                assert [comparable(r) for r in ray_rows] == [comparable(r) for r in seq_rows]
                figures[f"ray_{run}_s"] = ray_s
                figures[f"ray_{run}_overhead_per_cell_s"] = (ray_s - local_s) * cores / cells
        finally:
            ray.shutdown()
    if a.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{cells} cells on {a.trace.name} (first {a.trace_limit or 'all'} requests), "
          f"{cores} cores, load average {figures['load_average']:.1f} at start")
    print(f"  trace read once:        {read_s:7.2f} s (outside the timings)")
    replays = figures["replay_s_sum"]
    print(f"  sequential (-j 1):      {seq_s:7.2f} s  (sum of replay times {replays:.2f} s)")
    print(f"  local ({cores} processes):    {local_s:7.2f} s  speedup {figures['speedup']:.2f}x")
    print(f"  cores held on average:  {figures['sequential_cores_held']:.2f} sequential, "
          f"{figures['local_cores_held']:.2f} local (CPU s / wall s of the worker processes)")
    if not a.no_ray:
        print(f"  ray.init:               {figures['ray_init_s']:7.2f} s (outside the timings)")
        for run in ("cold", "warm"):
            print(f"  ray {run}:               {figures[f'ray_{run}_s']:7.2f} s  overhead "
                  f"{1000 * figures[f'ray_{run}_overhead_per_cell_s']:.0f} ms per cell vs local")


if __name__ == "__main__":
    main()
