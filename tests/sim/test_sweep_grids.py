"""Several grids swept as one (a grid file's ``grids``), and hidden policies as baselines.

A grid file's ``grids`` lists grids that share the file's other keys and
replace them where they give their own; the command line replaces both. Their
cells run as one sweep, timed and untimed together, into one result file.
``hidden`` (``--hidden``) lets a sweep run the registered policies that are
not ``--policy`` choices.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radix_evict.sim.sweep import (
    GridParts,
    ResultFile,
    SweepGridError,
    SweepSizeError,
    SweepValueError,
    local_executor,
    make_grid,
    make_grids,
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.schema import is_timed

GRIDS_TOML = """
policies = ["lru", "slru"]
oracle = true
params = {"chat.convs" = 12}

[[grids]]
workloads = ["chat"]
pool_tokens = ["20K", "40K"]

[[grids]]
workloads = ["chat"]
pool_tokens = ["20K"]
policies = ["lru"]
timing = true
max_running = [16]
rate = [4]
"""


def _grids_file(tmp_path: Path, text: str = GRIDS_TOML, name: str = "grids.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_each_grid_takes_the_shared_keys_and_replaces_them_with_its_own(tmp_path: Path) -> None:
    parts = read_grid_file(_grids_file(tmp_path))
    untimed, timed = make_grids(parts)
    assert [a.policy for a in untimed.policies] == ["lru", "slru"]
    assert untimed.pool_tokens == (20_000, 40_000) and untimed.timing is None
    assert untimed.references and timed.references  # shared
    assert [a.policy for a in timed.policies] == ["lru"]  # its own
    assert timed.timing is not None and timed.pool_tokens == (20_000,)
    assert untimed.sources == timed.sources  # the shared params reach both


def test_the_command_line_replaces_every_grids_value(tmp_path: Path) -> None:
    over = GridParts(pool_tokens=[30_000], policies=["lfu"]).over(
        read_grid_file(_grids_file(tmp_path)))
    grids = make_grids(over)
    assert len(grids) == 2
    for grid in grids:
        assert grid.pool_tokens == (30_000,)
        assert [a.policy for a in grid.policies] == ["lfu"]
    assert grids[1].timing is not None  # what the command line did not give stays the grid's


def test_a_grid_file_of_grids_is_not_one_grid(tmp_path: Path) -> None:
    with pytest.raises(SweepValueError, match="make_grids"):
        make_grid(read_grid_file(_grids_file(tmp_path)))
    assert len(make_grids(GridParts(policies=["lru"]))) == 1  # no grids: the one grid


@pytest.mark.parametrize(("text", "match"), [
    ("grids = 3\n", "grids: expected a list of grids"),
    ("grids = []\n", "grids: expected a list of grids"),
    ("grids = [1]\n", r"grids\[1\]: expected a mapping"),
    ('[[grids]]\npolicy = ["lru"]\n', r"grids\[1\]: key 'policy'"),
    ('[[grids]]\nobjective = "slo"\n', "one for the whole sweep"),
    ("[[grids]]\n[[grids.grids]]\n", "grids do not nest"),
    ('[[grids]]\npool_tokens = "1Q"\n', r"grids\[1\]: pool_tokens"),
    ("[[grids]]\nhidden = 1\n", r"grids\[1\]: hidden: expected true or false"),
])
def test_bad_grids_name_the_entry_and_key(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        read_grid_file(_grids_file(tmp_path, text))


def test_grids_run_as_one_sweep_timed_and_untimed_rows_in_one_file(tmp_path: Path) -> None:
    grids = make_grids(read_grid_file(_grids_file(tmp_path)))
    out = tmp_path / "rows.jsonl"
    plan = plan_sweep(grids, out)
    # untimed: 2 policies x 2 pools + the oracle at 2 pools + the ceiling; timed: lru, the
    # oracle, the timed ceiling at one pool and one point
    assert len(plan.cells) == 7 + 3
    assert plan.timed
    assert plan.size_text.startswith("(2 policy configs x 2 pool sizes")
    assert " + (1 policy config x 1 pool size" in plan.size_text
    outcome = run_sweep(plan, local_executor(2))
    assert not outcome.failed and outcome.ran == 10
    timed = [r for r in outcome.rows if is_timed(r)]
    assert len(timed) == 3 and all(r["ttft_p99_ms"] is not None for r in timed
                                   if r["policy"] != "ceiling")
    assert all("ttft_p99_ms" not in r for r in outcome.rows if not is_timed(r))
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 10
    again = plan_sweep(grids, out, write=False)
    assert not again.todo and len(again.kept) == 10  # a rerun resumes both kinds


def test_mixed_grids_share_a_csv_with_the_timed_columns(tmp_path: Path) -> None:
    grids = make_grids(read_grid_file(_grids_file(tmp_path)))
    out = tmp_path / "rows.csv"
    first = run_sweep(plan_sweep(grids, out), local_executor(1))
    assert not first.failed
    kept = ResultFile(out).rows
    assert len(kept) == 10
    assert sum(is_timed(r) for r in kept.values()) == 3


def test_a_cell_two_grids_list_runs_once() -> None:
    one = make_grid(GridParts(policies=["lru"], workloads=["chat"], pool_tokens=[20_000]))
    two = make_grid(GridParts(policies=["lru", "lfu"], workloads=["chat"], pool_tokens=[20_000]))
    plan = plan_sweep([one, two])
    assert [c.policy for c in plan.cells] == ["lru", "lfu"]


def test_the_cell_limit_counts_every_grid() -> None:
    grid = make_grid(GridParts(policies=["lru"], workloads=["chat"], pool_tokens=[1, 2, 3]))
    with pytest.raises(SweepSizeError, match="the 2 grids add up to 6 cells"):
        plan_sweep([grid, grid], max_cells=5)


def test_hidden_policies_need_hidden_and_run_with_it() -> None:
    parts = GridParts(policies=["lru", "mru", "filo"], workloads=["chat"], pool_tokens=[20_000])
    with pytest.raises(SweepGridError) as info:
        make_grid(parts).cells()
    text = str(info.value)
    assert "'mru' exists" in text and "is hidden" in text
    assert "to sweep filo, mru as baselines, add --hidden" in text
    cells = make_grid(GridParts(**{**parts.__dict__, "hidden": True})).cells()
    assert [c.policy for c in cells] == ["lru", "mru", "filo"]
    with pytest.raises(SweepGridError, match="unknown policy"):  # hidden is no wildcard
        make_grid(GridParts(policies=["nosuch"], hidden=True)).cells()


def test_a_grid_file_says_hidden(tmp_path: Path) -> None:
    path = _grids_file(tmp_path, 'policies = ["mru"]\nhidden = true\n')
    (grid,) = make_grids(read_grid_file(path))
    assert grid.hidden and [c.policy for c in grid.cells()] == ["mru"]
