"""Local sweeps: rows equal simulate's replays, result files resume, failures stay local."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.sweeps import flaky_installed, small_parts

from radix_evict.sim.replay import replay
from radix_evict.sim.sweep import (
    ROW_FIELDS,
    ResultFile,
    ResultFileError,
    comparable,
    local_executor,
    make_grid,
    plan_sweep,
    run_sweep,
)
from radix_evict.sim.sweep.sources import build_workload
from radix_evict.sim.sweep.summary import best_configs, curves, workload_label


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with flaky_installed(tmp_path_factory.mktemp("flaky-site")) as site:
        yield site


@pytest.fixture(scope="module")
def small_rows() -> list[dict[str, object]]:
    outcome = run_sweep(plan_sweep(make_grid(small_parts())), local_executor(2))
    assert not outcome.failed and not outcome.interrupted
    return outcome.rows


def test_rows_are_the_simulators_replays(small_rows: list[dict[str, object]]) -> None:
    plan = plan_sweep(make_grid(small_parts()))
    assert len(small_rows) == len(plan.cells) == 16
    for cell, row in zip(plan.cells, small_rows, strict=True):
        assert set(row) == set(ROW_FIELDS)
        assert row["cell"] == cell.key
        wl = build_workload(cell.source, cell.seed)
        r = replay(wl, cell.policy, cell.config, pool_tokens=cell.pool_tokens,
                   page_size=cell.page_size)
        assert (row["hit_rate"], row["p99_uncached"], row["evicted_tokens"]) == (
            r.hit_rate, r.p99_uncached, r.evicted_tokens), cell.describe()
        assert row["config"] == r.policy_config
    tlru = [r for r in small_rows if r["policy"] == "tlru"]
    assert tlru and all(r["config_source"] == "workload-suggested" for r in tlru)


def test_one_worker_and_two_give_the_same_rows(small_rows: list[dict[str, object]]) -> None:
    again = run_sweep(plan_sweep(make_grid(small_parts())), local_executor(1)).rows
    assert [comparable(r) for r in again] == [comparable(r) for r in small_rows]


def test_summary_best_config_and_curves(small_rows: list[dict[str, object]]) -> None:
    best = best_configs(small_rows)
    assert {(b.workload, b.policy) for b in best} == {
        (w, p) for w in {workload_label(r) for r in small_rows} for p in ("lru", "slru", "tlru")}
    for b in best:
        mine = [r for r in small_rows
                if workload_label(r) == b.workload and r["policy"] == b.policy]
        per_config: dict[str, list[float]] = {}
        for r in mine:
            per_config.setdefault(json.dumps(r["config"]), []).append(float(r["hit_rate"]))
        means = {k: sum(v) / len(v) for k, v in per_config.items()}
        assert b.hit_rate == pytest.approx(max(means.values()), abs=0.005 + 1e-9)
    for c in curves(small_rows):
        assert [p for p, _ in c.points] == [20_000, 100_000]
        assert c.points[0][1] <= c.points[1][1]  # a bigger pool never hits less here


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_result_files_resume(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="writing .parquet needs pyarrow")
    out = tmp_path / f"rows{suffix}"
    half = small_parts(pool_tokens=[20_000])
    first = run_sweep(plan_sweep(make_grid(half), out), local_executor(2))
    assert first.ran == 8
    plan = plan_sweep(make_grid(small_parts()), out)
    assert len(plan.kept) == 8 and len(plan.todo) == 8
    assert all(c.pool_tokens == 100_000 for c in plan.todo)
    second = run_sweep(plan, local_executor(2))
    assert second.ran == 8 and len(second.rows) == 16
    back = ResultFile(out).rows
    assert [comparable(back[r["cell"]]) for r in second.rows] == [
        comparable(r) for r in second.rows]
    assert plan_sweep(make_grid(small_parts()), out).todo == []


def test_a_cut_last_line_is_dropped_when_the_sweep_writes_not_when_it_plans(
        tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    run_sweep(plan_sweep(make_grid(small_parts(pool_tokens=[20_000])), out), local_executor(2))
    text = out.read_text()
    torn = text + text.splitlines()[0][:40]  # a writer killed mid-line
    out.write_text(torn)
    dry = plan_sweep(make_grid(small_parts(pool_tokens=[20_000])), out, write=False)
    assert len(dry.kept) == 8 and dry.todo == [] and dry.results is not None
    assert dry.results.torn == 40 and out.read_text() == torn  # planning changes nothing
    plan = plan_sweep(make_grid(small_parts(pool_tokens=[20_000])), out)
    assert out.read_text() == torn
    run_sweep(plan, local_executor(2))
    assert out.read_text() == text  # the sweep repaired its own file


def test_result_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"\.jsonl, \.csv, \.parquet"):
        ResultFile(tmp_path / "rows.txt")
    with pytest.raises(ResultFileError, match="does not exist"):
        ResultFile(tmp_path / "nowhere" / "rows.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"cell": "x", "status": "ok"}\nnot json\n')
    with pytest.raises(ResultFileError, match=r"bad\.jsonl:2"):
        ResultFile(bad)


def test_failing_cells_are_recorded_and_the_rest_go_on(flaky: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    parts = small_parts(policies=["lru", "flaky"],
                        vary={"flaky": {"mode": ["ok", "raise", "exit"]}}, traces=[],
                        params=[("chat", "convs", 12)],
                        pool_tokens=[20_000])
    outcome = run_sweep(plan_sweep(make_grid(parts), out), local_executor(2))
    status = {(r["policy"], json.dumps(r["config"])): (r["status"], r["error"])
              for r in outcome.rows}
    assert status[("lru", "null")] == ("ok", None)
    assert status[("flaky", '{"mode": "ok"}')] == ("ok", None)
    state, error = status[("flaky", '{"mode": "raise"}')]
    # The driver names the policy that raised (PolicyError), then what it raised.
    assert state == "error" and error.startswith("PolicyError: policy 'flaky' ")
    assert error.endswith("score() raised RuntimeError: flaky policy raised on purpose")
    assert status[("flaky", '{"mode": "exit"}')][1] == (
        "worker process died (exit code 7) before returning a result")
    assert len(outcome.failed) == 2
    # a rerun retries the failed cells only
    plan = plan_sweep(make_grid(parts), out)
    assert sorted(json.dumps(c.config_dict) for c in plan.todo) == [
        '{"mode": "exit"}', '{"mode": "raise"}']


def test_oracle_and_ceiling_are_reference_cells_not_policies() -> None:
    from radix_evict.sim.bound import replay_oracle
    from radix_evict.sim.sweep.summary import ceilings

    parts = small_parts(policies=["lru", "slru"], vary={}, traces=[],
                        params=[("chat", "convs", 12)], references=True)
    plan = plan_sweep(make_grid(parts))
    assert [c.policy for c in plan.cells] == ["lru", "lru", "slru", "slru", "oracle", "oracle",
                                              "ceiling"]
    assert "+ 3 reference cells (oracle, ceiling) = 7 cells" in plan.size_text
    rows = run_sweep(plan, local_executor(2)).rows
    assert all(r["status"] == "ok" for r in rows)
    oracle = [r for r in rows if r["policy"] == "oracle"]
    wl = build_workload(plan.cells[0].source, 0)
    for r in oracle:
        direct = replay_oracle(wl, pool_tokens=r["pool_tokens"])
        assert (r["hit_rate"], r["evicted_tokens"]) == (direct.hit_rate, direct.evicted_tokens)
    top = ceilings(rows)[workload_label(rows[0])]
    assert all(r["hit_rate"] <= top + 1e-12 for r in rows)  # nothing beats an endless pool
    assert {b.policy for b in best_configs(rows)} == {"lru", "slru"}
    assert {c.policy for c in curves(rows)} == {"lru", "slru", "oracle"}


def test_each_distinct_config_is_validated_once_not_once_per_cell(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As simulate: validated in the planning process, and the cells carry the frozen object."""
    from radix_evict.builtin_policies.frequency import SLRUConfig
    from radix_evict.sim.sweep import run_cell

    validated: list[Any] = []
    real = SLRUConfig.model_validate.__func__  # type: ignore[attr-defined]

    def validate(cls: Any, data: Any, **kw: Any) -> Any:
        validated.append(data)
        return real(cls, data, **kw)

    monkeypatch.setattr(SLRUConfig, "model_validate", classmethod(validate))
    parts = small_parts(policies=["lru", "slru"], traces=[], params=[("chat", "convs", 8)],
                        vary={"slru": {"protected_threshold": [1, 3, 3]}},
                        pool_tokens=[20_000, 50_000, 100_000], seeds=[0, 1])

    def in_process(cells: Any, wls: Any, progress: Any) -> Iterator[dict[str, Any]]:
        return (run_cell(c, wls[c.workload_key]) for c in cells)  # workers' code, counted here

    plan = plan_sweep(make_grid(parts))
    slru = [c for c in plan.cells if c.policy == "slru"]
    assert len(slru) == 2 * 3 * 2  # 2 distinct configs x 3 pools x 2 seeds
    assert validated == [{"protected_threshold": 1}, {"protected_threshold": 3}]
    assert len({id(c.config) for c in slru}) == 2  # one frozen object per config, shared
    outcome = run_sweep(plan, in_process)
    assert not outcome.failed and outcome.ran == len(plan.cells)
    assert len(validated) == 2  # no cell validated its config again
    assert "slru: the 3 configs listed are 2 distinct configs" in plan.notes[0]
