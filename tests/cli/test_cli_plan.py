"""CLI: ``radix-evict plan``: the table and the answer line (on a fake fleet), errors naming the
option, and a small real plan once the fleet replay exists."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict.sim.fleet import plan as plan_mod
from radix_evict.sim.fleet import plan_cells, plan_setup
from radix_evict.sim.fleet.plan import PlanSetting, Probe
from radix_evict.sim.sweep import run as sweep_run

SMALL = ["-w", "chat", "-P", "convs=4"]
HAS_REGISTRY = importlib.util.find_spec("radix_evict.sim.fleet.registry") is not None
HAS_FLEET = importlib.util.find_spec("radix_evict.sim.fleet.replay") is not None


def run(*args: str) -> Any:
    return run_cli("plan", *args)


@pytest.fixture
def fake_fleet(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Probes answer from a fake fleet: TTFT 1000 ms x need / N (lru needs 14, tlru 12)."""
    calls: list[tuple[str, int]] = []
    needs = {"lru": 14, "tlru": 12}

    def probe(self: Any, setting: PlanSetting, n: int) -> Probe:
        calls.append((setting.label, n))
        ttft = 1000.0 * needs[setting.run.name] / n
        return Probe(n, ttft, ttft, 0.25, n * 0.5, 10)

    monkeypatch.setattr(plan_mod.FleetProbe, "__call__", probe)
    if not HAS_REGISTRY:  # the router registry is another part of the issue
        monkeypatch.setattr(plan_setup, "check_router", lambda *a, **k: None)
    return calls


def test_plan_prints_the_table_and_the_answer(fake_fleet: list[tuple[str, int]]) -> None:
    r = run(*SMALL, "--slo-ttft", "1000", "-p", "lru", "-p", "tlru", "--router", "round_robin")
    assert r.exit_code == 0, r.output
    assert "tlru needs 12 replicas, lru 14: tlru saves 2 GPUs (14%)" in r.stdout
    assert "capacity plan" in r.stdout and "round_robin" in r.stdout
    assert "probe lru, round_robin: 14 replicas" in r.stderr  # a line per probe
    assert len(fake_fleet) == len(set(fake_fleet))


def test_plan_starts_where_told(fake_fleet: list[tuple[str, int]]) -> None:
    r = run(*SMALL, "--slo-ttft", "1000", "-p", "tlru", "--router", "round_robin",
            "--start-replicas", "32", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["settings"][0]["replicas"] == 12
    probed = [n for _, n in fake_fleet]
    assert probed[0] == 32 and 11 in probed and 1 not in probed


def test_plan_json(fake_fleet: list[tuple[str, int]]) -> None:
    r = run(*SMALL, "--slo-ttft", "1000", "-p", "lru", "-p", "tlru", "--router", "round_robin",
            "--json", "--max-replicas", "13")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [s["replicas"] for s in data["settings"]] == [None, 12]
    assert data["answers"] == ["tlru needs 12 replicas, lru more than 13: tlru saves more than "
                               "1 GPUs"]
    assert data["percentile"] == 99 and data["slo_ttft_ms"] == 1000


@pytest.mark.parametrize(("args", "named"), [
    (["--slo-ttft", "0"], "--slo-ttft"),
    (["--slo-ttft", "100", "--percentile", "0"], "--percentile"),
    (["--slo-ttft", "100", "--max-replicas", "0"], "--max-replicas"),
    (["--slo-ttft", "100", "--start-replicas", "9", "--max-replicas", "4"], "--start-replicas"),
    (["--slo-ttft", "100", "--host-tokens", "lots"], "--host-tokens"),
    (["--slo-ttft", "100", "--router", "{}"], "--router"),
    (["--slo-ttft", "100", "--router", "round_robin=[1]"], "--router round_robin"),
    (["--slo-ttft", "100", "--pool-tokens", "10", "--page-size", "64"], "--pool-tokens"),
    (["--slo-ttft", "100", "--pool-tokens", "4X"], "--pool-tokens"),
    (["--slo-ttft", "100", "-p", "no_such_policy"], "no_such_policy"),
    (["--slo-ttft", "100", "--trace", "x.jsonl"], "--trace or --workload"),
    (["--slo-ttft", "100", "-w", "chat,agentic"], "--workload"),
    ([], "--slo-ttft"),
])
def test_bad_options_are_named(fake_fleet: list[tuple[str, int]], args: list[str],
                               named: str) -> None:
    r = run(*SMALL, *args)
    assert r.exit_code in (1, 2), r.output
    assert named in r.output
    assert not fake_fleet  # nothing probed


def test_a_missing_trace_is_named(fake_fleet: list[tuple[str, int]]) -> None:
    r = run("--trace", "no_such_trace.jsonl", "--slo-ttft", "100")
    assert r.exit_code == 2 and "no_such_trace.jsonl: no such file" in r.output
    assert not fake_fleet


@pytest.mark.skipif(not HAS_REGISTRY, reason="the router registry is not built yet")
@pytest.mark.parametrize(("router", "named"), [
    ("no_such_router", "no_such_router"),
    ('round_robin={"no_such_key": 1}', "no_such_key"),
])
def test_bad_routers_are_named(fake_fleet: list[tuple[str, int]], router: str, named: str
                               ) -> None:
    r = run(*SMALL, "--slo-ttft", "100", "--router", router)
    assert r.exit_code in (1, 2), r.output
    assert named in r.output and "--router" in r.output
    assert not fake_fleet


@pytest.mark.skipif(not (HAS_FLEET and HAS_REGISTRY), reason="the fleet replay is not built yet")
def test_a_small_real_plan() -> None:
    """A real plan on a small chat workload: the count it reports meets the SLO in its own
    JSON, and every probe below it misses."""
    r = run(*SMALL, "-P", "convs=8", "--slo-ttft", "2000", "--router", "round_robin",
            "--max-replicas", "8", "--json")
    assert r.exit_code == 0, r.output
    (s,) = json.loads(r.stdout)["settings"]
    probes = {p["replicas"]: p for p in s["probes"]}
    if s["replicas"] is None:
        assert all(p["ttft_ms"] > 2000 for p in probes.values())
    else:
        assert probes[s["replicas"]]["ttft_ms"] <= 2000
        assert all(p["ttft_ms"] > 2000 for n, p in probes.items() if n < s["replicas"])


def test_plan_out_keeps_probes_as_sweep_rows_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--out: each probe is a fleet cell's sweep row; a rerun replays nothing it has."""
    out = tmp_path / "probes.jsonl"
    args = [*SMALL, "-P", "convs=12", "--slo-ttft", "80", "-p", "lru", "--router", "round_robin",
            "--max-replicas", "8", "--out", str(out), "--json"]
    first = run(*args)
    assert first.exit_code == 0, first.output
    plan = json.loads(first.stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    probes = plan["settings"][0]["probes"]
    assert sorted(r["replicas"] for r in rows) == [p["replicas"] for p in probes]
    assert all(json.loads(r["cell"])["fleet"]["router"] == "round_robin" for r in rows)
    assert {r["replicas"]: r["ttft_p99_ms"] for r in rows} == {
        p["replicas"]: p["ttft_ms"] for p in probes}

    def no_replay(*_: Any, **__: Any) -> Any:
        raise AssertionError("a probe the file has was replayed")

    monkeypatch.setattr(plan_cells, "run_cell", no_replay)
    monkeypatch.setattr(sweep_run, "local_executor", lambda *_a, **_k: no_replay)
    again = run(*args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == plan
    assert len(out.read_text().splitlines()) == len(rows)


def test_plan_out_takes_the_percentiles_rows_hold(tmp_path: Path) -> None:
    r = run(*SMALL, "--slo-ttft", "80", "--percentile", "95", "--out", str(tmp_path / "p.jsonl"))
    assert r.exit_code == 2 and "--percentile 95 with --out" in r.output
    assert not (tmp_path / "p.jsonl").exists()


def test_plan_ray_runs_the_probes_on_the_sweeps_ray_executor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--ray: the round's probes go to the sweep's Ray executor (here its local stand-in),
    with the address given; the figures are the local run's."""
    asked: list[str | None] = []

    def fake_ray(address: str | None = "auto") -> Any:
        asked.append(address)
        return sweep_run.local_executor(1)

    monkeypatch.setattr(sweep_run, "ray_executor", fake_ray)
    args = [*SMALL, "-P", "convs=12", "--slo-ttft", "80", "-p", "lru", "--router", "round_robin",
            "--max-replicas", "4", "--json"]
    on_ray = run(*args, "--ray", "10.0.0.1:6379")
    assert on_ray.exit_code == 0, on_ray.output
    assert asked == ["10.0.0.1:6379"]
    here = run(*args)
    assert here.exit_code == 0, here.output
    assert json.loads(on_ray.stdout) == json.loads(here.stdout)
    bad = run(*args, "--ray", "auto", "--percentile", "95")
    assert bad.exit_code == 2 and "--percentile 95 with --ray" in bad.output


def test_plan_and_sweep_share_their_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe is the sweep's fleet cell: a plan takes a sweep's rows, a sweep a plan's."""
    out = tmp_path / "rows.jsonl"
    common = [*SMALL, "-P", "convs=12", "--slo-ttft", "80", "-p", "lru", "--router",
              "round_robin", "--out", str(out)]
    swept = run_cli("sweep", "--timing", *common, "--replicas", "1,2,4", "-j", "1")
    assert swept.exit_code == 0, swept.output

    def no_replay(*_: Any, **__: Any) -> Any:
        raise AssertionError("a probe the sweep ran was replayed")

    with monkeypatch.context() as m:
        m.setattr(sweep_run, "local_executor", lambda *_a, **_k: no_replay)
        planned = run(*common, "--max-replicas", "4", "--json")
    assert planned.exit_code == 0, planned.output
    probes = json.loads(planned.stdout)["settings"][0]["probes"]
    assert [p["replicas"] for p in probes] == [1, 2, 4]
    more = run(*common, "--max-replicas", "8")  # probes 8 too, and keeps it
    assert more.exit_code == 0, more.output
    again = run_cli("sweep", "--timing", *common, "--replicas", "1,2,4,8", "-j", "1")
    assert again.exit_code == 0 and "4 already in" in again.stderr and "0 to run" in again.stderr


def test_plan_host_tiers_are_settings(fake_fleet: list[tuple[str, int]]) -> None:
    r = run(*SMALL, "--slo-ttft", "1000", "-p", "lru", "--router", "round_robin",
            "--host-tokens", "0,1M", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [s["host"] for s in data["settings"]] == [
        None, "host 1,000,000 tokens, write_through"]
    assert data["answers"] == [
        "no host tier and host 1,000,000 tokens, write_through both need 14 replicas: no host "
        "tier changes the count"]
