"""CLI: ``radix-evict sweep``: grid size shown first, bad cells caught first, exit codes, Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli
from helpers.signals import default_sigint
from helpers.sweeps import TRACE

SMALL = ["-P", "chat.convs=12", "--pool-tokens", "20K,100K"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def test_sweep_prints_the_grid_size_then_rows_and_summary(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    r = run("-p", "lru", "-p", "slru", "-g", "slru.protected_threshold=1,2", *SMALL,
            "--out", str(out), "--plot", str(tmp_path / "curve.png"))
    assert r.exit_code == 0, r.output
    assert ("sweep: 3 policy configs x 2 pool sizes x 1 workload x 1 seed = 6 cells; "
            "6 to run on 2 local worker processes") in r.stderr
    assert "best config per policy" in r.stdout
    assert "hit rate by pool size" in r.stdout
    assert (tmp_path / "curve.png").read_bytes().startswith(PNG_MAGIC)
    assert len(out.read_text().splitlines()) == 7  # header + 6 rows
    again = run("-p", "lru", "-p", "slru", "-g", "slru.protected_threshold=1,2,4", *SMALL,
                "--out", str(out), "--json")
    assert again.exit_code == 0, again.output
    assert "6 already in" in again.stderr and "2 to run" in again.stderr
    data = json.loads(again.stdout)
    assert (data["cells"], data["ran"], data["kept"], data["failed"]) == (8, 2, 6, 0)
    assert len(data["rows"]) == 8
    assert {b["policy"] for b in data["summary"]["best_configs"]} == {"lru", "slru"}


def test_a_bad_cell_fails_at_once_and_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    r = run("-p", "lru", "-p", "slru", "-g", "slru.protected_threshold=2,-1", *SMALL,
            "--out", str(out), "--json")
    assert r.exit_code == 1, r.output
    assert "cell 5 of 6 (slru {\"protected_threshold\":-1}" in r.stderr
    assert "and 1 more cell with this config" in r.stderr
    data = json.loads(r.stdout)
    assert data["status"] == "error" and data["errors"][0]["key"] == "protected_threshold"
    assert not out.exists()


@pytest.mark.parametrize(("args", "match"), [
    (["-g", "slru.protected_threshold"], "expected POLICY.KEY=V1,V2"),
    (["-g", "slru.protected_threshold=8..1"], "below the start"),
    (["--pool-tokens", "1Q"], "not a whole number"),
    (["--out", "rows.txt"], ".jsonl, .csv, .parquet"),
    (["--plot", "curve.gif"], ".png"),
    (["--trace", "no/such/trace.jsonl"], "no such file"),
])
def test_usage_errors_say_what_is_wrong(args: list[str], match: str) -> None:
    r = run("-p", "slru", *args)
    assert r.exit_code == 2, r.output
    assert match in r.stderr


def test_unknown_workload_parameter_is_invalid_input() -> None:
    r = run("-p", "lru", "-P", "convz=3")
    assert r.exit_code == 1 and "convz" in r.stderr


def test_dry_run_lists_cells_and_replays_nothing(tmp_path: Path) -> None:
    r = run("-p", "lru,lfu", *SMALL, "-w", "chat", "--trace", str(TRACE), "-P", "trace.limit=50",
            "--dry-run")
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 8 and lines[0].strip().startswith("1  lru, pool 20,000, page 1, chat")


def test_failed_cells_set_exit_code_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.sweeps import flaky_installed

    with flaky_installed(tmp_path / "site"):
        r = run("-p", "lru,flaky", "-g", "flaky.mode=ok,raise", "-P", "convs=12",
                "--pool-tokens", "20K", "--json")
    assert r.exit_code == 3, r.output
    data = json.loads(r.stdout)
    assert data["failed"] == 1
    assert "cell failed: flaky" in r.stderr and "1 of 3 cells failed" in r.stderr


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "radix-evict"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "radix_evict.cli"]


def test_ctrl_c_stops_cleanly_keeps_finished_cells_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    args = [*_cli(), "sweep", "-p", "lru,lfu,slru,priority", "-P", "convs=25", "--seeds",
            "0..3", "--pool-tokens", "20K", "-j", "1", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and len(out.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "rerun the same command to resume" in err
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert 2 <= len(kept) < 16 and all(r["status"] == "ok" for r in kept)
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(kept)} already in" in done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 16 and len({r["cell"] for r in rows}) == 16


def test_oracle_adds_reference_lines_to_the_summary() -> None:
    r = run("-p", "lru", *SMALL, "--oracle", "--json")
    assert r.exit_code == 0, r.output
    assert "+ 3 reference cells (oracle, ceiling) = 5 cells" in r.stderr
    data = json.loads(r.stdout)
    curves = {c["policy"]: c for c in data["summary"]["curves"]}
    assert set(curves) == {"lru", "oracle"}
    (ceiling,) = data["summary"]["ceilings"].values()
    assert all(h <= ceiling + 1e-12 for c in curves.values() for h in c["hit_rate"])
    assert [b["policy"] for b in data["summary"]["best_configs"]] == ["lru"]


def test_a_value_listed_twice_or_pools_equal_in_pages_are_one_cell_and_said_so() -> None:
    r = run("-g", "slru.protected_threshold=1,1,1", "-P", "convs=5", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "sweep: 1 policy config x 1 pool size x 1 workload x 1 seed = 1 cell" in r.stderr
    r = run("-p", "lru", "-P", "convs=5", "--pool-tokens", "100000,100300", "--page-size", "512",
            "--dry-run")
    assert r.exit_code == 0, r.output
    assert "1 policy config x 1 pool size x 1 workload x 1 seed = 1 cell" in r.stderr
    assert "--pool-tokens 100,000, 100,300 are all 99,840 tokens in whole pages of 512" in r.stderr
    assert len(r.stdout.strip().splitlines()) == 1 and "pool 99,840" in r.stdout


def test_a_huge_grid_is_refused_unless_the_cap_is_raised() -> None:
    r = run("-g", "slru.protected_threshold=1..1000", "--pool-tokens", "1..1000", "--dry-run")
    assert r.exit_code == 2, r.output
    assert "1,000,000 cells, over the limit of 10,000" in r.stderr and "--max-cells" in r.stderr
    r = run("-g", "slru.protected_threshold=1..120", "--pool-tokens", "1K..100K+1K",
            "-P", "convs=3", "--dry-run", "--max-cells", "20000")
    assert r.exit_code == 0, r.output
    assert "= 12,000 cells" in r.stderr
    assert len(r.stdout.splitlines()) == 12_000


def test_a_dry_run_is_linear_in_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cell is compared with another (``c in plan.todo`` on a list was quadratic)."""
    from radix_evict.sim.sweep.grid import Cell

    compared = []
    monkeypatch.setattr(Cell, "__eq__", lambda self, other: compared.append(1) or True)
    r = run("-g", "slru.protected_threshold=1..20", "--pool-tokens", "1K..50K+1K", "-P",
            "convs=3", "--dry-run")
    assert r.exit_code == 0, r.output
    assert len(r.stdout.splitlines()) == 1000 and compared == []


@pytest.mark.parametrize(("args", "needle"), [
    (["--pool-tokens", "20G"], "--pool-tokens 20,000,000,000: a pool that size needs"),
    (["--pool-tokens", "99999999999999999999"], "GiB"),
    (["--page-size", "100M"], "--page-size 100,000,000: chat's default pool"),
    (["--plot", "/nonexistent/x.png"], "--plot /nonexistent/x.png: directory /nonexistent"),
])
def test_sweep_runs_simulate_s_preflight_before_any_cell(
        args: list[str], needle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from radix_evict.cli import cmd_sweep

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("a cell ran before the check")

    monkeypatch.setattr(cmd_sweep, "run_sweep", refuse)
    monkeypatch.setattr("radix_evict.sim.preflight.physical_memory", lambda: 64 * 2**30)
    r = run("-p", "lru", "-P", "convs=3", *args)
    assert r.exit_code == 2, r.output
    assert needle in r.stderr


@pytest.mark.parametrize("how", ["options", "grid file", "dry run"])
def test_a_chunk_smaller_than_a_page_is_refused_when_the_grid_is_built(
        how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #36: not an error row per cell mid-sweep, but a usage error naming the values."""
    from radix_evict.cli import cmd_sweep

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("a cell ran before the check")

    monkeypatch.setattr(cmd_sweep, "run_sweep", refuse)
    args = ["--timing", "--page-size", "1,512", "--chunked-prefill-size", "256"]
    if how == "grid file":
        grid = tmp_path / "g.yaml"
        grid.write_text("grids:\n  - {workloads: [chat], timing: true, page_size: [1, 512], "
                        "chunked_prefill_size: 256}\n", encoding="utf-8")
        args = ["--grid", str(grid)]
    r = run("-p", "lru", "-P", "convs=3", "--pool-tokens", "20K", *args,
            *(["--dry-run"] if how == "dry run" else []))
    assert r.exit_code == 2, r.output
    text = " ".join(r.stderr.split())
    assert ("--chunked-prefill-size 256 with --page-size 512: chunked_prefill_size 256 is "
            "smaller than a page (512 tokens)") in text
    assert "failed" not in text and not r.stdout.strip()
