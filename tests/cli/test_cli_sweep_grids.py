"""CLI: ``sweep --grid`` with several grids (timed and untimed in one run), and ``--hidden``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.rigs import run_cli

GRIDS = """
policies: [lru, slru]
params: {chat.convs: 12}
grids:
  - {workloads: [chat], pool_tokens: [20K, 40K], oracle: true}
  - {workloads: [chat], pool_tokens: [20K], timing: true, max_running: [16], rate: [4]}
  - {workloads: [chat], page_size: 4}
"""


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def test_a_grid_file_of_grids_runs_as_one_sweep(tmp_path: Path) -> None:
    grid = tmp_path / "grids.yaml"
    grid.write_text(GRIDS, encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    r = run("--grid", str(grid), "--out", str(out), "-j", "2", "--json")
    assert r.exit_code == 0, r.output
    # untimed: 2 x 2 pools + the oracle at 2 + the ceiling; timed: 2 x 1 pool; page 4: 2 at
    # chat's own pool
    assert "= 11 cells; 11 to run on 2 local worker processes" in r.stderr
    assert r.stderr.count("(2 policy configs x") == 3
    data = json.loads(r.stdout)
    assert data["failed"] == 0 and len(data["rows"]) == 11
    timed = [row for row in data["rows"] if row.get("cost_model")]
    assert len(timed) == 2 and data["objective"] == "hit-rate"
    assert {row["page_size"] for row in data["rows"]} == {1, 4}
    # the summary reads each workload and timing point on its own
    points = {b.get("timing") for b in data["summary"]["best_configs"]}
    assert points == {None, "llama3-8b-h100, max running 16, rate 4/s"}
    # a command-line axis replaces every grid's: one pool size everywhere, all cells new
    again = run("--grid", str(grid), "--out", str(out), "--pool-tokens", "30K", "--dry-run")
    assert again.exit_code == 0, again.output
    assert all("pool 30,000" in line or "default pool" in line
               for line in again.stdout.strip().splitlines())


def test_grid_timing_options_are_checked_in_each_grid(tmp_path: Path) -> None:
    grid = tmp_path / "grids.yaml"
    grid.write_text("grids:\n  - {workloads: [chat], time_scale: 2}\n", encoding="utf-8")
    r = run("--grid", str(grid), "-p", "lru")
    assert r.exit_code == 2, r.output
    assert "--time-scale: timed-replay options; add --timing" in r.stderr


def test_hidden_policies_are_refused_with_the_way_in_then_run_with_hidden() -> None:
    tiny = ["-P", "convs=5", "--pool-tokens", "20K"]
    r = run("-p", "lru,mru", *tiny)
    assert r.exit_code == 1, r.output
    assert "is hidden" in r.stderr and "add --hidden" in r.stderr
    r = run("-p", "lru,mru,filo,fifo", "--hidden", *tiny, "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert [row["policy"] for row in rows] == ["lru", "mru", "filo", "fifo"]
