"""CLI: no output is written over an input of the run, nor over a file radix-evict did not
write without ``--force``, and every output is written whole or not at all (issue #36).

The rule is written once (:mod:`radix_evict.outputs`); these are its writers:
``simulate --enable-metrics`` and ``--plot``, ``calibrate --out``, ``sweep --out``
and ``--plot``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli
from helpers.sweeps import write_trace

from radix_evict.outputs import Input, OutputFile, OutputFileError, replacing, starts_with

SMALL = ["--param", "convs=2", "-p", "lru"]
POINTS = "uncached,cached,batch,ms\n" + "\n".join(
    [f"{n},0,1,{2 + 0.01 * n}" for n in (100, 200, 400, 800, 1600)]
    + [f"0,{c},{b},{1 + 0.1 * b + 0.002 * c}" for c, b in ((100, 4), (200, 8), (400, 8),
                                                          (800, 16), (1600, 2))]) + "\n"


def refused(r: Any, *needles: str) -> None:
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    for needle in needles:
        assert needle in r.stderr, r.stderr


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "t.jsonl", conversations=4, turns=2)


def _simulate_trace(trace: Path, *args: str) -> Any:
    return run_cli("simulate", "--trace", str(trace), "--page-size", "512", "-p", "lru",
                   "--no-progress", *args)


# ------------------------------------------------------------------ never an input of the run

def test_metrics_over_the_input_trace_is_refused_and_the_trace_kept(trace: Path) -> None:
    """The issue's repro: ``--enable-metrics t.jsonl`` replaced the trace, exit 0."""
    before = trace.read_bytes()
    r = _simulate_trace(trace, "--enable-metrics", str(trace))
    refused(r, f"--enable-metrics {trace}", "input of this run", "--trace")
    assert trace.read_bytes() == before
    r = _simulate_trace(trace, "--enable-metrics", str(trace), "--force")  # never, forced or not
    refused(r, "input of this run")
    assert trace.read_bytes() == before


@pytest.mark.parametrize("alias", ["symlink", "hardlink"])
def test_the_same_file_by_another_name_is_an_input_too(trace: Path, alias: str) -> None:
    other = trace.with_name(f"other-{alias}.prom")
    (os.symlink if alias == "symlink" else os.link)(trace, other)
    before = trace.read_bytes()
    refused(_simulate_trace(trace, "--plot", str(other.with_suffix(".png")), "--enable-metrics",
                            str(other)), "input of this run: --trace")
    assert trace.read_bytes() == before


def test_calibrate_over_its_own_points_is_refused(tmp_path: Path) -> None:
    """The issue's repro: ``calibrate p.csv -o p.csv`` replaced the measurements with TOML."""
    pts = tmp_path / "p.csv"
    pts.write_text(POINTS)
    refused(run_cli("calibrate", str(pts), "-o", str(pts)), f"--out {pts}", "input of this run")
    assert pts.read_text() == POINTS


def test_sweep_out_over_its_trace_is_refused(trace: Path, tmp_path: Path) -> None:
    before = trace.read_bytes()
    r = run_cli("sweep", "-p", "lru", "--trace", str(trace), "--page-size", "512",
                "--pool-tokens", "8192", "--out", str(trace), "--no-progress")
    refused(r, f"--out {trace}", "input of this run")
    assert trace.read_bytes() == before
    assert not trace.with_name("t.jsonl.lock").exists()


# ------------------------------------------------------------- never another's file, unforced

def test_metrics_over_a_file_that_is_not_ours_needs_force(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    refused(run_cli("simulate", *SMALL, "--enable-metrics", str(notes)),
            f"--enable-metrics {notes}", "not a metrics file radix-evict wrote", "--force")
    assert notes.read_text() == "my notes\n"
    assert run_cli("simulate", *SMALL, "--enable-metrics", str(notes), "--force").exit_code == 0
    assert notes.read_text().startswith("# HELP radix_evict_")
    # now ours: a rerun replaces it without a flag
    assert run_cli("simulate", *SMALL, "--enable-metrics", str(notes)).exit_code == 0


def test_plots_are_marked_ours_and_others_need_force(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    for suffix in (".png", ".svg", ".pdf"):
        plot = tmp_path / f"p{suffix}"
        assert run_cli("simulate", *SMALL, "--plot", str(plot)).exit_code == 0
        assert run_cli("simulate", *SMALL, "--plot", str(plot)).exit_code == 0  # ours again
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n holiday")
    refused(run_cli("simulate", *SMALL, "--plot", str(photo)), "not a plot radix-evict wrote")
    assert photo.read_bytes() == b"\x89PNG\r\n\x1a\n holiday"


def test_calibrate_replaces_its_own_model_but_not_another_file(tmp_path: Path) -> None:
    pts = tmp_path / "p.csv"
    pts.write_text(POINTS)
    model = tmp_path / "m.toml"
    assert run_cli("calibrate", str(pts), "-o", str(model)).exit_code == 0
    assert run_cli("calibrate", str(pts), "-o", str(model)).exit_code == 0  # ours
    mine = tmp_path / "pyproject.toml"
    mine.write_text("[project]\nname = 'x'\n")
    refused(run_cli("calibrate", str(pts), "-o", str(mine)), "not a cost model file", "--force")
    assert mine.read_text() == "[project]\nname = 'x'\n"
    assert run_cli("calibrate", str(pts), "-o", str(mine), "--force").exit_code == 0


def test_a_device_is_never_an_output(tmp_path: Path) -> None:
    refused(run_cli("simulate", *SMALL, "--enable-metrics", "/dev/null", "--force"),
            "--enable-metrics /dev/null: is a device")


# ------------------------------------------------------------------ whole or not at all

def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "m.prom"
    path.write_text("# HELP radix_evict_old 1\n")
    out = OutputFile("--enable-metrics", path, "metrics file", starts_with(b"# HELP radix_evict_"))
    with pytest.raises(RuntimeError), out.writing() as tmp:
        tmp.write_text("# HELP radix_evict_new, half")
        raise RuntimeError("the disk filled up")
    assert path.read_text() == "# HELP radix_evict_old 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom"]
    out.write_text("# HELP radix_evict_new 2\n")
    assert path.read_text() == "# HELP radix_evict_new 2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom"]


def test_a_replaced_file_keeps_its_permissions_and_a_symlink_stays_one(tmp_path: Path) -> None:
    real = tmp_path / "real.prom"
    real.write_text("# HELP radix_evict_x 1\n")
    real.chmod(0o640)
    link = tmp_path / "link.prom"
    link.symlink_to(real)
    with replacing(OutputFile("--enable-metrics", link, "metrics file").target) as tmp:
        tmp.write_text("new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert real.stat().st_mode & 0o777 == 0o640


def test_the_rule_names_the_option_the_path_and_the_input(tmp_path: Path) -> None:
    grid = tmp_path / "g.toml"
    grid.write_text("policies = ['lru']\n")
    out = OutputFile("--out", grid, "sweep result file", inputs=(Input("--grid", grid),))
    with pytest.raises(OutputFileError, match=r"^--out .*g\.toml: is an input of this run: "
                                              r"--grid;"):
        out.check()


def test_schema_output_replaces_its_own_schema_only(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    assert run_cli("schema", "-o", str(schema)).exit_code == 0
    assert run_cli("schema", "-o", str(schema), "--policy", "tlru").exit_code == 0  # ours
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": 1}\n')
    refused(run_cli("schema", "-o", str(notes)), f"--output {notes}", "--force")
    assert notes.read_text() == '{"mine": 1}\n'
