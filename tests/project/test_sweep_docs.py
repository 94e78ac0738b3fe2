"""The Sweeps page: its figure comes from a real sweep whose rows are committed next to it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import common, sweeps  # noqa: E402


def test_sweeps_page_table_matches_its_rows() -> None:
    ((path, text),) = sweeps.page().items()
    assert path.read_text(encoding="utf-8") == text, (
        "docs/sweeps.md disagrees with docs/figures/sweep-rows.jsonl: run "
        "python docs/generate.py sweep-figure (or all, if only the page text changed)")


def test_sweep_figure_is_a_real_sweep_with_its_bounds() -> None:
    rows = sweeps.load_rows()
    assert rows and all(r["status"] == "ok" for r in rows)
    assert {r["workload"] for r in rows} == {sweeps.TRACE}
    assert {"oracle", "ceiling"} <= {r["policy"] for r in rows}
    ceiling = next(r["hit_rate"] for r in rows if r["policy"] == "ceiling")
    assert all(r["hit_rate"] <= ceiling + 1e-12 for r in rows)
    assert sweeps.PLOT.read_bytes().startswith(b"\x89PNG")


def test_sweeps_page_is_in_the_nav() -> None:
    assert ": sweeps.md" in (common.ROOT / "mkdocs.yml").read_text(encoding="utf-8")
