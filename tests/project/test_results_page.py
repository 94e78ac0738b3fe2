"""The results page: its tables come from one committed sweep, and say what its rows say.

docs/results.md's generated section is rendered from docs/results/rows.jsonl
and docs/results/meta.json (``python docs/generate.py results``); the rows are
exactly the cells of docs/results/sweep.toml, the grid the page's command
sweeps. A number edited in the rows or in the page fails the check.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import results  # noqa: E402

from radix_evict.sim.sweep import make_grids, plan_sweep, read_grid_file  # noqa: E402

POLICIES = ["lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo",
            "arc", "s3fifo", "sieve", "wtinylfu", "gdsf", "reuse", "learned"]
FIX = "run `python docs/generate.py results` (or `results --measure` to rerun the sweep)"


def _generator() -> ModuleType:
    name = "radix_evict_docs_generate"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict[str, Any]]:
    return results.load_rows()


def _row(rows: list[dict[str, Any]], policy: str, trace: str, pool: int,
         timed: bool = False) -> dict[str, Any]:
    return next(r for r in rows if r["policy"] == policy and r["workload"].endswith(trace)
                and r["pool_tokens"] == pool and (r.get("cost_model") is not None) == timed)


def test_results_page_matches_its_rows() -> None:
    ((path, text),) = results.page().items()
    assert path == results.PAGE
    assert path.read_text(encoding="utf-8") == text, f"docs/results.md disagrees: {FIX}"


def test_an_edited_number_in_the_rows_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    generate = _generator()
    rows = _rows()
    row = _row(rows, "learned", results.CONVERSATION, 3_999_744)
    shown = f"**{100 * row['hit_rate']:.1f}%**"
    assert shown in results.PAGE.read_text(encoding="utf-8")  # the goal table shows it
    edited = [dict(r) for r in rows]
    _row(edited, "learned", results.CONVERSATION, 3_999_744)["hit_rate"] += 0.05
    monkeypatch.setattr(results, "load_rows", lambda path=results.ROWS: edited)
    ((_, text),) = results.page().items()
    assert shown not in text.split("### The learned policy")[1]
    assert generate.main(["results", "--check"]) == 1
    assert generate.main(["all", "--check"]) == 1
    assert "docs/results.md" in capsys.readouterr().err


def test_an_edited_number_in_the_page_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = results.PAGE.read_text(encoding="utf-8")
    body = page.split("<!-- generated:results -->")[1]
    first = re.search(r"\d+\.\d%", body)
    assert first is not None
    wrong = str(float(first.group()[:-1]) + 1.0) + "%"
    edited = page.replace(first.group(), wrong, 1)
    copy = tmp_path / "results.md"
    copy.write_text(edited, encoding="utf-8")
    monkeypatch.setattr(results, "PAGE", copy)
    ((_, text),) = results.page().items()
    assert text == page != edited


def test_the_rows_are_the_cells_of_the_committed_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing sweep.toml without rerunning it, or rows of another grid, fails here."""
    monkeypatch.chdir(results.ROOT)  # the command runs from the root: traces named from there
    assert results.ARGS[:3] == ["sweep", "--grid", "docs/results/sweep.toml"]
    plan = plan_sweep(make_grids(read_grid_file(Path(results.ARGS[2]))))
    rows = _rows()
    # rows are written as cells finish: the same cells, each once, in any order
    have, want = sorted(r["cell"] for r in rows), sorted(c.key for c in plan.cells)
    assert have == want, (
        f"docs/results/rows.jsonl is not the sweep of docs/results/sweep.toml as this code "
        f"expands it ({len(set(have) - set(want))} rows of other cells, "
        f"{len(set(want) - set(have))} cells missing: the grid, a policy's config or a cost "
        "model changed); rerun it: python docs/generate.py results --measure")
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]


def test_every_policy_and_both_bounds_on_every_workload_timed_and_not() -> None:
    rows = _rows()
    assert results.policies(rows) == POLICIES
    ws = results.workloads(rows)
    assert [Path(w.name).name for w in ws] == [results.CONVERSATION, results.SYNTHETIC, "chat"]
    for w in ws[:2]:
        assert w.name.startswith("../shared/traces/"), "traces are read in place, not copied"
        assert w.page_size == 512 and len(w.pools) == 3
        assert 3_999_744 in w.pools  # the goal's 4M tokens, in whole pages
    assert ws[2].page_size == 1 and len(ws[2].pools) == 1  # chat at its own pool
    for w in ws:
        for timed in (False, True):
            mine = [r for r in rows if r["workload"] == w.name
                    and (r.get("cost_model") is not None) == timed]
            for pool in w.pools:
                have = {r["policy"] for r in mine if r["pool_tokens"] == pool}
                assert have == {*POLICIES, "oracle"}, (w.name, pool, timed)
            assert sum(r["policy"] == "ceiling" for r in mine) == 1
            if timed:
                assert all(r["ttft_p99_ms"] is not None for r in mine
                           if r["policy"] != "ceiling")


def test_gap_closed_runs_from_lru_to_the_oracle() -> None:
    rows = _rows()
    f = results.Figures(rows)
    for w in results.workloads(rows):
        for pool in w.pools:
            assert f.gap_closed(w.name, "lru", pool) == 0
            assert f.gap_closed(w.name, "oracle", pool) == pytest.approx(1)
            oracle = f.hit[w.name, "oracle", pool]
            assert oracle <= f.ceiling[w.name] + 1e-12
            assert all(f.hit[w.name, p, pool] <= oracle + 1e-12 for p in POLICIES)
    lru, mine, best = (_row(rows, p, results.CONVERSATION, 3_999_744)
                       for p in ("lru", "learned", "oracle"))
    gap = f.gap_closed(mine["workload"], "learned", 3_999_744)
    assert gap == pytest.approx((mine["hit_rate"] - lru["hit_rate"])
                                / (best["hit_rate"] - lru["hit_rate"]))


def test_meta_says_what_ran() -> None:
    meta = results.load_meta()
    assert meta["command"] == results.COMMAND
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", meta["date"])
    assert set(meta["versions"]) == set(results.DISTRIBUTIONS)
    assert meta["cells"] == len(_rows()) and meta["jobs"] == results.JOBS
    assert meta["core"] in ("compiled", "pure Python")
    assert f"`{results.COMMAND}`" in results.PAGE.read_text(encoding="utf-8")


def test_results_page_is_in_the_nav() -> None:
    assert ": results.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
