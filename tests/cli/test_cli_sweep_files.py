"""CLI: ``sweep --out`` never damages a file, and every file a sweep reads is bounded.

A file that is not a result file, and any file under ``--dry-run``, stays
byte-identical; two sweeps on one file never lose a finished row; a device,
a FIFO or a bad row is a clear error before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict.sim.sweep.lock import FileLock

TINY = ["-p", "lru", "-P", "convs=5", "--pool-tokens", "20K"]


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def assert_refused(r: Any, code: int, *needles: str) -> None:
    assert r.exit_code == code, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    for needle in needles:
        assert needle in r.stderr, r.stderr


@pytest.mark.parametrize("dry", [True, False])
@pytest.mark.parametrize(("name", "text"), [
    ("f.jsonl", '{"my":"important"}\n{"notes":"x"}'),
    ("one.jsonl", "single line"),
    ("one.csv", "single line"),
    ("notes.csv", "a,b\n1,2\n3,"),
])
def test_a_file_that_is_not_a_result_file_stays_byte_identical(
        tmp_path: Path, name: str, text: str, dry: bool) -> None:
    out = tmp_path / name
    out.write_bytes(text.encode())
    r = run(*TINY, "--out", str(out), *(["--dry-run"] if dry else []))
    assert_refused(r, 2, str(out))
    assert out.read_bytes() == text.encode()
    assert not (tmp_path / f"{name}.lock").exists() or not dry


def _torn(tmp_path: Path, suffix: str) -> tuple[Path, bytes]:
    out = tmp_path / f"rows{suffix}"
    assert run(*TINY, "--out", str(out)).exit_code == 0
    whole = out.read_bytes()
    out.write_bytes(whole + whole.splitlines(keepends=True)[-1][:30])
    return out, whole


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_dry_run_changes_nothing_and_a_real_run_repairs_a_torn_line(
        tmp_path: Path, suffix: str) -> None:
    out, whole = _torn(tmp_path, suffix)
    torn = out.read_bytes()
    r = run(*TINY, "--out", str(out), "--dry-run")
    assert r.exit_code == 0, r.output
    assert "its last line is unfinished (30 bytes" in r.stderr
    assert "this dry run changed nothing" in r.stderr
    assert out.read_bytes() == torn
    r = run(*TINY, "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "dropping it before adding rows" in r.stderr
    assert out.read_bytes() == whole


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("requests", {"x": 1}, "requests: input should be a valid integer"),
    ("pool_tokens", [1], "pool_tokens: input should be a valid integer"),
    ("hit_rate", 7.5, "hit_rate: input should be less than or equal to 1"),
    ("status", "fine", "status: input should be 'ok' or 'error'"),
])
def test_resumed_rows_are_checked_against_the_row_schema(
        tmp_path: Path, field: str, value: Any, needle: str) -> None:
    out = tmp_path / "rows.jsonl"
    assert run(*TINY, "-p", "lfu", "--out", str(out)).exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rows[1][field] = value
    text = "".join(json.dumps(r) + "\n" for r in rows)
    out.write_text(text)
    r = run(*TINY, "-p", "lfu", "--out", str(out))
    assert_refused(r, 2, f"{out}:2: ", needle)
    assert out.read_text() == text


def test_a_device_as_result_file_fails_at_once(tmp_path: Path) -> None:
    full = tmp_path / "full.jsonl"
    full.symlink_to("/dev/full")
    r = run(*TINY, "--out", str(full))
    assert_refused(r, 2, "full.jsonl: not a regular file (a device)")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_trace_that_never_ends_is_refused(tmp_path: Path, kind: str) -> None:
    trace = tmp_path / "trace.jsonl"
    if kind == "fifo":
        os.mkfifo(trace)
    else:
        trace.symlink_to("/dev/zero")
    r = run("-p", "lru", "--trace", str(trace), "--dry-run")
    assert_refused(r, 2, "trace.jsonl: not a regular file")
    s = run_cli("simulate", "-p", "lru", "--trace", str(trace))
    assert_refused(s, 2, "trace.jsonl: not a regular file")


def test_a_grid_file_naming_a_missing_trace_fails_a_dry_run(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("policies: [lru]\ntraces: [missing.jsonl]\n")
    r = run("--grid", str(grid), "--dry-run")
    assert_refused(r, 2, "missing.jsonl")
    assert "1  lru" not in r.stdout


def test_a_grid_file_is_read_within_bounds(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.symlink_to("/dev/zero")
    assert_refused(run("--grid", str(grid), "--dry-run"), 2, "grid.yaml: not a regular file")


def test_a_second_writer_is_refused_and_the_file_is_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    pytest.importorskip("pyarrow")
    assert run(*TINY, "--out", str(out)).exit_code == 0
    before = out.read_bytes()
    lock = FileLock(tmp_path / "rows.parquet.lock")
    lock.acquire()  # as another sweep that is writing would hold it
    try:
        r = run(*TINY, "-p", "lfu", "--out", str(out))
        assert_refused(r, 2, "another sweep is writing this file", f"process {os.getpid()}")
        assert out.read_bytes() == before
        assert run(*TINY, "-p", "lfu", "--out", str(out), "--dry-run").exit_code == 0
    finally:
        lock.release()
    assert run(*TINY, "-p", "lfu", "--out", str(out)).exit_code == 0


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "radix-evict"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "radix_evict.cli"]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_two_sweeps_started_together_never_lose_a_finished_row(
        tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"dd{suffix}"
    procs = [subprocess.Popen(
        [*_cli(), "sweep", "-p", policy, "-P", "convs=30", "--pool-tokens", "10K..80K*2",
         "-j1", "--out", str(out), "--json", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for policy in ("lru", "lfu")]
    done = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    written: set[str] = set()
    for code, stdout, stderr in done:
        if code == 0:
            written |= {r["cell"] for r in json.loads(stdout)["rows"]}
        else:
            assert code == 2 and "another sweep is writing this file" in stderr, stderr
    from radix_evict.sim.sweep import ResultFile

    assert written and set(ResultFile(out).rows) >= written
    assert any(code == 0 for code, _, _ in done)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs")
def test_an_unwritable_result_directory_fails_before_any_cell() -> None:
    r = run(*TINY, "--out", "/sys/kernel/rows.jsonl")
    assert_refused(r, 2, "/sys/kernel/rows.jsonl: cannot write there")
