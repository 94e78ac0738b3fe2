"""Sweeps with host-tier admission as an axis (issue #40): keys gain ``admission`` only when one
is given (host files of before resume), rows carry the admission policy, its refused backups
and the PCIe bytes, equal to the two-tier replay's; bad values refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.sweeps import host_parts

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.sweep import (
    ResultFile,
    ResultFileError,
    SweepValueError,
    local_executor,
    make_grid,
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.schema import (
    ADMISSION_FIGURES,
    HOST_ROW_FIELDS,
    columns,
)
from radix_evict.sim.sweep.sources import build_workload

SMALL = {"policies": ["lru"], "host_tokens": [8_000], "write_policies": ["write_through"]}


def _host_key(cell: Any) -> dict[str, Any]:
    return dict(json.loads(cell.key)["host"])


def test_the_admission_axis_multiplies_the_host_points_and_keys_gain_it_only_when_given() -> None:
    plain = make_grid(host_parts(**SMALL)).cells()
    grid = make_grid(host_parts(**SMALL, admissions=["selective", "tinylfu"]))
    cells = grid.cells()
    assert len(plain) == 1 and len(cells) == 2
    assert [c.host.admission for c in cells if c.host] == ["selective", "tinylfu"]
    assert "admission" not in _host_key(plain[0])  # the key every host file of before has
    for c in cells:
        key = _host_key(c)
        assert key.pop("admission") == c.host.admission  # type: ignore[union-attr]
        assert key == _host_key(plain[0])
    assert grid.size_text(cells).endswith("x 2 admission policies")
    assert "admission tinylfu" in cells[1].describe()


@pytest.mark.parametrize(("over", "match"), [
    ({"admissions": ["lfu"]}, "admission 'lfu': use selective, tinylfu"),
    ({"admissions": ["selective"], "host_tokens": None},
     "admission: host-tier options"),
])
def test_bad_admission_values_are_refused_naming_the_key(over: dict[str, Any],
                                                         match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        make_grid(host_parts(**{**SMALL, **over}))


def test_admission_rows_are_the_two_tier_replays() -> None:
    parts = host_parts(**SMALL, admissions=["selective", "tinylfu"])
    plan = plan_sweep(make_grid(parts))
    outcome = run_sweep(plan, local_executor(1))
    assert not outcome.failed
    wl = build_workload(plan.cells[0].source, 0)
    rejected = []
    for row in outcome.rows:
        assert list(row) == list(columns(host=True, admission=True))
        r = replay(wl, "lru", pool_tokens=8_000,
                   host=HostTierSpec(tokens=8_000, admission=row["admission"]))
        assert r.host is not None
        assert (row["hit_rate"], row["written_tokens"]) == (r.hit_rate, r.host.written_tokens)
        assert row["admission_rejected_tokens"] == r.host.admission_rejected_tokens
        assert row["pcie_bytes"] == r.host.pcie_bytes and row["pcie_bytes"] > 0
        rejected.append(row["admission_rejected_tokens"])
    assert any(rejected)  # the admission policies refused something: the column is no blank


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_host_files_of_before_resume_and_admission_cells_add_to_them(tmp_path: Path,
                                                                     suffix: str) -> None:
    out = tmp_path / f"rows{suffix}"
    assert run_sweep(plan_sweep(make_grid(host_parts(**SMALL)), out), local_executor(1)).ran == 1
    text = out.read_bytes()
    if suffix == ".csv":
        assert text.decode().splitlines()[0] == ",".join(HOST_ROW_FIELDS)
    # without the axis: the same cell, kept
    assert plan_sweep(make_grid(host_parts(**SMALL)), out).todo == []
    with_axis = host_parts(**SMALL, admissions=["tinylfu"])
    if suffix == ".csv":  # no place for the admission columns: refused, the file unchanged
        with pytest.raises(ResultFileError, match=r"admission_rejected_tokens.*another --out"):
            plan_sweep(make_grid(with_axis), out)
        assert out.read_bytes() == text
        return
    plan = plan_sweep(make_grid(with_axis), out)
    assert len(plan.todo) == 1 and plan.todo[0].host.admission == "tinylfu"  # type: ignore
    assert run_sweep(plan, local_executor(1)).ran == 1
    assert out.read_bytes().startswith(text)
    rows = list(ResultFile(out).rows.values())
    assert [r.get("admission") for r in rows] == [None, "tinylfu"]
    assert all(k not in rows[0] for k in ADMISSION_FIGURES)
    assert plan_sweep(make_grid(with_axis), out).todo == []  # resumes


def test_a_csv_with_admission_columns_resumes(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    parts = host_parts(**SMALL, admissions=["selective"])
    assert run_sweep(plan_sweep(make_grid(parts), out), local_executor(1)).ran == 1
    header = out.read_text().splitlines()[0].split(",")
    assert "admission" in header and set(ADMISSION_FIGURES) <= set(header)
    (row,) = ResultFile(out).rows.values()
    assert row["admission"] == "selective" and row["pcie_bytes"] > 0
    assert plan_sweep(make_grid(parts), out).todo == []


def test_a_grid_file_takes_admission(tmp_path: Path) -> None:
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text("host_tokens: 8K\nadmission: selective,tinylfu\n", encoding="utf-8")
    assert read_grid_file(grid_file).admissions == ["selective", "tinylfu"]
