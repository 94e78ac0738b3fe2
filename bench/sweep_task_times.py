"""Where a sweep's CPU goes: every task of a grid file run once, one at a time, timed.

A sweep's wall time hides which kind of cell costs it: this runs each task
(a cell, or a curve or oracle group) of the grid in this one process, in CPU
seconds of this process (they hold when other work shares the cores), and
sums them by kind: token or timed replay, fleet or hybrid, and the workload.
Issue #41's results-page figures came from it; a speed-up aims at the largest
sum. The rows are not compared here (the sweep's own A/B is for that).

    .venv/bin/python bench/sweep_task_times.py docs/results/sweep.toml [--jsonl tasks.jsonl]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from radix_evict.sim.sweep.curve_groups import plan_tasks, run_task, task_cells
from radix_evict.sim.sweep.grid import Cell
from radix_evict.sim.sweep.run import plan_sweep
from radix_evict.sim.sweep.sources import build_workloads
from radix_evict.sim.sweep.spec import GridParts, make_grids, read_grid_file


def kind_of(cell: Cell) -> str:
    """``timed hybrid · <trace>``, ``token · chat``: what a task's time is summed under."""
    parts = ["timed" if cell.timing is not None else "token"]
    if cell.fleet is not None:
        parts.append("fleet")
    if cell.hybrid is not None:
        parts.append("hybrid")
    return f"{' '.join(parts)} · {Path(cell.source.label).name}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grid", type=Path, help="a sweep grid file (.toml, .yaml)")
    ap.add_argument("--jsonl", type=Path, help="also write one line per task here")
    args = ap.parse_args()

    plan = plan_sweep(make_grids(GridParts().over(read_grid_file(args.grid))), None, write=False)
    tasks = plan_tasks(plan.todo)
    workloads = build_workloads(plan.todo)
    seconds: dict[str, float] = defaultdict(float)
    rows: dict[str, int] = defaultdict(int)
    out = args.jsonl.open("w") if args.jsonl else None
    for task in tasks:
        t0 = time.process_time()
        made = run_task(task, workloads[task.workload_key])
        cpu = time.process_time() - t0
        kind = kind_of(task_cells(task)[0])
        seconds[kind] += cpu
        rows[kind] += len(made)
        if out is not None:
            out.write(json.dumps({"task": task.describe(), "kind": kind, "cpu_s": round(cpu, 3),
                                  "rows": len(made)}) + "\n")
    if out is not None:
        out.close()
    total = sum(seconds.values())
    print(f"{'CPU s':>8}  {'share':>6}  {'rows':>5}  kind")
    for kind, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"{s:8.1f}  {s / total:6.1%}  {rows[kind]:5d}  {kind}")
    print(f"{total:8.1f}  {1:6.0%}  {sum(rows.values()):5d}  all {len(tasks)} tasks")


if __name__ == "__main__":
    main()
