"""Fleet sweeps: replicas and router (with its config) as grid axes; keys that grow a ``fleet``
entry only when the axes are given (old result files resume); fleet rows; grid files; errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict.sim.sweep import (
    GridParts,
    SweepValueError,
    local_executor,
    make_grid,
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.schema import FLEET_ROW_FIELDS, columns

SMALL = dict(policies=["lru"], workloads=["chat"], params=[(None, "convs", 6)], timing=True)


def _key(cell: Any) -> dict[str, Any]:
    return dict(json.loads(cell.key))


def test_fleet_axes_multiply_the_grid_and_enter_the_key() -> None:
    grid = make_grid(GridParts(**SMALL, replicas=[1, 2, 4],  # type: ignore[arg-type]
                               routers=[("round_robin", None),
                                        ("cache_aware", {"cache_threshold": 0.3})]))
    cells = grid.cells()
    assert len(cells) == grid.count() == 6
    fleets = [_key(c)["fleet"] for c in cells]
    assert {(f["replicas"], f["router"]) for f in fleets} == {
        (n, r) for n in (1, 2, 4) for r in ("round_robin", "cache_aware")}
    assert {"cache_threshold": 0.3} in [f["router_config"] for f in fleets]
    assert "cache_aware {\"cache_threshold\":0.3}" in cells[1].describe()


def test_a_grid_without_fleet_axes_keeps_its_keys() -> None:
    plain = make_grid(GridParts(**SMALL)).cells()  # type: ignore[arg-type]
    assert all("fleet" not in _key(c) for c in plain)
    fleet = make_grid(GridParts(**SMALL, replicas=[1])).cells()  # type: ignore[arg-type]
    assert _key(fleet[0])["fleet"] == {"replicas": 1, "router": "round_robin",
                                       "router_config": None}
    assert {k: v for k, v in _key(fleet[0]).items() if k != "fleet"} == _key(plain[0])


@pytest.mark.parametrize(("parts", "message"), [
    (dict(policies=["lru"], replicas=[2]), "--replicas: a fleet replays timed"),
    (dict(SMALL, replicas=[0]), "--replicas: expected whole numbers >= 1"),
    (dict(SMALL, routers=[("no_such_router", None)]), "--router no_such_router"),
    (dict(SMALL, routers=[("round_robin", {"no_such_key": 1})]), "no_such_key"),
])
def test_bad_fleet_axes_are_named(parts: dict[str, Any], message: str) -> None:
    with pytest.raises(SweepValueError, match=message):
        make_grid(GridParts(**parts))


def test_fleet_rows_and_one_replica_equals_the_single_server() -> None:
    """A fleet row has the fleet's columns; one replica gives the single-server timed figures."""
    single = make_grid(GridParts(**SMALL))  # type: ignore[arg-type]
    fleet = make_grid(GridParts(**SMALL, replicas=[1, 2]))  # type: ignore[arg-type]
    plan = plan_sweep([single, fleet], None)
    rows = run_sweep(plan, local_executor(1)).rows
    assert all(r["status"] == "ok" for r in rows), rows
    one, (at1, at2) = rows[0], rows[1:]
    assert at1["replicas"] == 1 and at2["replicas"] == 2 and at1["router"] == "round_robin"
    assert tuple(at2) == FLEET_ROW_FIELDS
    for k in ("hit_rate", "ttft_p99_ms", "ttft_p50_ms", "requests", "p99_uncached"):
        assert at1[k] == pytest.approx(one[k]), k
    assert at2["gpu_hours"] > 0 and at2["balance_requests"] >= 1.0


def test_an_old_timed_csv_resumes_and_refuses_fleet_rows(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    args = ["--timing", "-w", "chat", "-P", "convs=6", "-p", "lru", "-j", "1", "--out", str(out)]
    first = run_cli("sweep", *args)
    assert first.exit_code == 0, first.output
    assert out.read_text().splitlines()[0].split(",") == list(columns(timed=True))
    again = run_cli("sweep", *args)
    assert again.exit_code == 0 and "1 already in" in again.stderr and "0 to run" in again.stderr
    fleet = run_cli("sweep", *args, "--replicas", "2")
    assert fleet.exit_code == 2 and "fleet's figures" in fleet.output


def test_a_fleet_sweep_resumes(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    args = ["--timing", "-w", "chat", "-P", "convs=6", "-p", "lru", "-j", "1", "--out", str(out),
            "--router", "round_robin", "--replicas", "1,2"]
    first = run_cli("sweep", *args)
    assert first.exit_code == 0, first.output
    more = run_cli("sweep", *args[:-1], "1,2,3")
    assert more.exit_code == 0 and "2 already in" in more.stderr and "1 to run" in more.stderr


def test_a_grid_file_takes_fleet_keys(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("timing: true\nreplicas: '1..4*2'\n"
                    "router: {round_robin: null, cache_aware: {cache_threshold: 0.4}}\n")
    parts = read_grid_file(path)
    assert parts.replicas == [1, 2, 4]
    assert parts.routers == [("round_robin", None), ("cache_aware", {"cache_threshold": 0.4})]
    path.write_text("timing: true\n"
                    "router: ['least_load', 'cache_aware={\"cache_threshold\": 1}']\n")
    assert read_grid_file(path).routers == [("least_load", None),
                                            ("cache_aware", {"cache_threshold": 1})]
    path.write_text("timing: true\nrouter: [1]\n")
    with pytest.raises(SweepValueError, match="router: expected router names"):
        read_grid_file(path)
