"""The results page's rows and meta hold nothing machine-dependent, and carry ``via``.

``python docs/generate.py results --measure`` rewrites the sweep's rows in the
grid's order without the timing columns, and meta.json has no wall time, so a
rerun on any machine changes the committed files only where figures changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import results  # noqa: E402

from radix_evict.sim.sweep.schema import TIMING_FIELDS  # noqa: E402


def test_committed_rows_have_no_timings_no_absolute_paths_and_say_via() -> None:
    rows = results.load_rows()
    assert not [r["cell"] for r in rows if set(TIMING_FIELDS) & set(r)]
    assert not [r["workload"] for r in rows if r["workload"].startswith("/")]
    assert all(r["via"] in ("curve", "replay") for r in rows)
    curve = [r for r in rows if r["via"] == "curve"]
    assert curve and all(r["policy"] == "lru" and r.get("cost_model") is None for r in curve)
    assert "wall_s" not in results.load_meta()


def test_committed_rows_are_in_the_grid_s_order() -> None:
    rows = results.load_rows()
    assert [r["cell"] for r in rows] == results.grid_keys()


def test_reproducible_rows_sorts_by_the_grid_and_drops_timings() -> None:
    rows = [{"cell": "b", "hit_rate": 0.5, "replay_s": 1.2, "cache_s": 0.3, "via": "replay"},
            {"cell": "a", "hit_rate": 0.4, "replay_s": 2.0, "cache_s": None, "via": "curve"}]
    assert results.reproducible_rows(rows, ["a", "b"]) == [
        {"cell": "a", "hit_rate": 0.4, "via": "curve"},
        {"cell": "b", "hit_rate": 0.5, "via": "replay"}]
    with pytest.raises(ValueError, match="1 rows are not cells"):
        results.reproducible_rows(rows, ["a"])
