"""Sweeps compute lru's pool sizes with one curve pass: rows equal the per-size replays'.

lru cells with no host tier and no timing that differ only in pool size are
one task (``curve_groups.CurveGroup``); their rows have the same keys and
figures as the cells' own replays, with ``via`` ``curve`` (``replay`` where the
pass stood aside, and for every other cell). ``curve=False`` or
``RADIX_EVICT_SWEEP_CURVE=0`` turns it off.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.sweeps import small_parts, timed_parts

from radix_evict.sim.sweep import (
    ROW_FIELDS,
    ResultFile,
    comparable,
    local_executor,
    make_grid,
    plan_sweep,
    run_sweep,
)
from radix_evict.sim.sweep.curve_groups import CURVE_ENV, CurveGroup, OracleGroup, plan_tasks

POOLS = [5_000, 20_000, 50_000, 100_000, 200_000]


def parts(**over: Any) -> Any:
    base: dict[str, Any] = dict(policies=["lru", "slru"], vary={}, pool_tokens=POOLS,
                                page_sizes=[1, 16], seeds=[0, 1])
    base.update(over)
    return small_parts(**base)


def figures(row: dict[str, Any]) -> dict[str, Any]:
    out = comparable(row)
    out.pop("via")
    return out


@pytest.fixture(scope="module")
def both() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    grid = make_grid(parts())
    curve = run_sweep(plan_sweep(grid), local_executor(2), curve=True).rows
    replays = run_sweep(plan_sweep(grid), local_executor(2), curve=False).rows
    return curve, replays


def test_curve_rows_equal_the_per_size_replays(
        both: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    curve, replays = both
    assert len(curve) == len(replays) == 2 * 5 * 2 * 3  # policies x pools x pages x sources
    assert all(r["status"] == "ok" for r in curve + replays)
    for a, b in zip(curve, replays, strict=True):
        assert list(a) == list(b) == list(ROW_FIELDS)
        assert a["cell"] == b["cell"]
        assert figures(a) == figures(b), a["cell"]
    vias = [r["via"] for r in curve if r["policy"] == "lru"]
    assert vias.count("curve") >= 10, vias  # the pass computed most lru cells
    assert all(r["via"] == "replay" for r in replays)
    assert all(r["via"] == "replay" for r in curve if r["policy"] != "lru")


def test_the_environment_turns_the_curve_off(monkeypatch: pytest.MonkeyPatch) -> None:
    grid = make_grid(parts(policies=["lru"], seeds=[0], page_sizes=[1], traces=[],
                           params=[("chat", "convs", 12)]))
    monkeypatch.setenv(CURVE_ENV, "0")
    rows = run_sweep(plan_sweep(grid), local_executor(1)).rows
    assert {r["via"] for r in rows} == {"replay"}
    monkeypatch.setenv(CURVE_ENV, "1")
    rows = run_sweep(plan_sweep(grid), local_executor(1)).rows
    assert "curve" in {r["via"] for r in rows}


def test_groups_are_lru_cells_differing_only_in_pool_size() -> None:
    cells = plan_sweep(make_grid(parts())).cells
    tasks = plan_tasks(cells)
    groups = [t for t in tasks if isinstance(t, CurveGroup)]
    assert len(groups) == 2 * 3  # page sizes x (chat seed 0, chat seed 1, the trace)
    for g in groups:
        assert len(g.cells) == len(POOLS)
        assert {(c.policy, c.page_size, c.source, c.seed) for c in g.cells} == {
            ("lru", g.page_size, g.cells[0].source, g.cells[0].seed)}
    covered = [c.key for t in tasks for c in (t.cells if isinstance(t, CurveGroup) else (t,))]
    assert sorted(covered) == sorted(c.key for c in cells)  # every cell once
    assert plan_tasks(cells, curve=False) == cells
    timed = plan_sweep(make_grid(timed_parts(pool_tokens=[20_000, 50_000]))).cells
    assert plan_tasks(timed) == timed  # a timed lru cell is its own replay


def test_resume_runs_only_the_new_cells_and_keeps_via(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    small = parts(policies=["lru"], seeds=[0], page_sizes=[1], traces=[],
                  params=[("chat", "convs", 12)])
    first = run_sweep(plan_sweep(make_grid(replace(small, pool_tokens=POOLS[:3])),
                                 out), local_executor(2))
    assert first.ran == 3
    plan = plan_sweep(make_grid(small), out)
    assert len(plan.kept) == 3 and sorted(c.pool_tokens for c in plan.todo) == POOLS[3:]
    second = run_sweep(plan, local_executor(2))
    assert second.ran == 2 and len(second.rows) == 5
    assert [r["via"] for r in second.rows[3:]] == ["curve", "curve"]
    back = ResultFile(out).rows
    assert [comparable(back[r["cell"]]) for r in second.rows] == [
        comparable(r) for r in second.rows]
    assert plan_sweep(make_grid(small), out).todo == []


def test_a_csv_from_before_the_via_column_resumes(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    small = parts(policies=["lru"], seeds=[0], page_sizes=[1], traces=[],
                  params=[("chat", "convs", 12)])
    head = replace(small, pool_tokens=POOLS[:2])
    run_sweep(plan_sweep(make_grid(head), out), local_executor(1))
    with out.open(newline="") as fh:  # the file as an earlier version wrote it
        rows = list(csv.DictReader(fh))
    legacy = [k for k in ROW_FIELDS if k != "via"]
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=legacy, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    plan = plan_sweep(make_grid(small), out)
    assert len(plan.kept) == 2 and len(plan.todo) == 3
    outcome = run_sweep(plan, local_executor(1))
    assert outcome.ran == 3 and not outcome.failed
    with out.open(newline="") as fh:
        assert next(csv.reader(fh)) == legacy  # its header kept; the new rows fit it
    assert len(ResultFile(out).rows) == 5


def test_the_plan_says_which_cells_the_curve_computes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a dry run shows: each cell to run that a pass computes, and a note per pass."""
    small = parts(policies=["lru", "slru"], seeds=[0], page_sizes=[1], traces=[],
                  params=[("chat", "convs", 12)])
    plan = plan_sweep(make_grid(small))
    lru = [c for c in plan.cells if c.policy == "lru"]
    assert {c.key for c in lru} == set(plan.via) and set(plan.via.values()) == {"curve"}
    assert all(plan.via_mark(c) == "  (via curve)" for c in lru)
    assert all(plan.via_mark(c) == "" for c in plan.cells if c.policy != "lru")
    (note,) = plan.notes
    assert note.startswith("lru pool curve, 5 pool sizes, page 1, chat")
    assert "5,000, 20,000, 50,000, 100,000, 200,000 from one pass" in note
    out = tmp_path / "rows.jsonl"  # a cell already in the result file runs in no pass
    run_sweep(plan_sweep(make_grid(replace(small, pool_tokens=POOLS[:4])), out),
              local_executor(1))
    rest = plan_sweep(make_grid(small), out)
    assert rest.via == {} and rest.notes == []  # one lru cell left: its own replay
    monkeypatch.setenv(CURVE_ENV, "0")
    off = plan_sweep(make_grid(small))
    assert off.via == {} and off.notes == []


def test_oracle_cells_of_a_workload_share_one_task_and_give_their_own_rows() -> None:
    """Oracle cells (token and timed, each pool) of one workload and page size: one task,
    one future index; each row what the cell's own replay gives."""
    grids = [make_grid(parts(policies=["lru"], seeds=[0], page_sizes=[16], references=True,
                             pool_tokens=POOLS[:3])),
             make_grid(timed_parts(policies=["lru"], references=True, rates=[4.0],
                                   pool_tokens=POOLS[1:3], page_sizes=[16]))]
    plan = plan_sweep(grids)
    groups = [t for t in plan_tasks(plan.todo) if isinstance(t, OracleGroup)]
    assert sorted(len(g.cells) for g in groups) == [3, 5]  # the trace; chat token + timed
    assert all({c.policy for c in g.cells} == {"oracle"} for g in groups)
    oracle = [c for c in plan.cells if c.policy == "oracle"]
    assert all(plan.via_mark(c) == "  (oracle index shared)" for c in oracle)
    assert not set(plan.via) & {c.key for c in oracle}  # their rows say via replay
    assert sum(n.startswith("oracle, ") for n in plan.notes) == 2
    grouped = run_sweep(plan, local_executor(2), curve=True).rows
    alone = run_sweep(plan_sweep(grids), local_executor(2), curve=False).rows
    assert [figures(r) for r in grouped] == [figures(r) for r in alone]  # lru: via aside
    assert all(r["status"] == "ok" for r in grouped)
    assert len({r["hit_rate"] for r in grouped if r["policy"] == "oracle"}) > 3
