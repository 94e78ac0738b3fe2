"""CLI: ``simulate --timing --replicas N --router R`` and ``radix-evict routers``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.rigs import run_cli, simulate_json

from radix_evict.sim.fleet.registry import routers

SMALL = ["--param", "convs=30", "--pool-tokens", "20000", "--no-progress", "--timing"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def test_fleet_json_has_fleet_and_per_replica_figures() -> None:
    data = simulate_json(*SMALL, "--replicas", "3", "--router", "least_load", "-p", "lru",
                         "-p", "tlru", "--slo-ttft", "200")
    assert data["mode"] == "fleet"
    assert data["fleet"] == {"replicas": 3, "router": "least_load", "router_config": {},
                             "seed": 0}
    assert [r["policy"] for r in data["results"]] == ["lru", "tlru"]
    for r in data["results"]:
        assert r["replicas"] == 3 and len(r["per_replica"]) == 3
        assert sum(p["requests"] for p in r["per_replica"]) == r["requests"]
        assert r["requests"] == r["fleet"]["finished"] + r["fleet"]["refused"]
        assert r["balance"]["requests_max_over_mean"] >= 1.0
        assert 0.0 <= r["fleet"]["slo_attainment"] <= 1.0
        assert r["gpu_hours"] == pytest.approx(3 * r["fleet"]["makespan_s"] / 3600)


def test_one_replica_gives_the_one_server_timed_figures() -> None:
    one = simulate_json(*SMALL, "-p", "lru")["results"][0]
    fleet = simulate_json(*SMALL, "-p", "lru", "--replicas", "1")["results"][0]
    for key in ("ttft_ms", "queue_ms", "tpot_ms", "e2e_ms", "makespan_s", "retractions"):
        assert fleet["fleet"][key] == one[key], key
    assert fleet["hit_rate"] == one["hit_rate"]


def test_the_fleet_tables_show_every_replica() -> None:
    r = run_cli("simulate", *SMALL, "-p", "lru", "--replicas", "2", "--router", "session")
    assert r.exit_code == 0, r.output
    assert "2 replicas behind session" in r.stdout
    assert "lru: per replica" in r.stdout and "GPU-h" in r.stdout


def test_replicas_without_timing_names_both_options() -> None:
    r = run_cli("simulate", "--param", "convs=5", "--replicas", "2", "--no-progress")
    assert r.exit_code == 2
    assert "--replicas" in r.stderr and "--timing" in r.stderr


def test_a_router_without_replicas_is_refused() -> None:
    r = run_cli("simulate", *SMALL, "--router", "least_load")
    assert r.exit_code == 2 and "--replicas" in r.stderr


def test_an_unknown_router_lists_the_known_ones() -> None:
    r = run_cli("simulate", *SMALL, "--replicas", "2", "--router", "sticky")
    assert r.exit_code == 1
    assert "'sticky'" in r.stderr
    for name in routers():
        assert name in r.stderr


def test_a_bad_router_config_key_is_named(tmp_path: Path) -> None:
    r = run_cli("simulate", *SMALL, "--replicas", "2", "--router", "cache_aware",
                "--router-config", '{"cache_treshold": 0.5}')
    assert r.exit_code == 1
    assert "'cache_treshold'" in r.stderr and "cache_threshold" in r.stderr
    cfg = tmp_path / "router.json"
    cfg.write_text('{"cache_threshold": 0.9}')
    data = simulate_json(*SMALL, "-p", "lru", "--replicas", "2", "--router", "cache_aware",
                         "--router-config", f"@{cfg}")
    assert data["fleet"]["router_config"] == {"cache_threshold": 0.9}


def test_a_fleet_replays_one_workload_without_the_oracle() -> None:
    r = run_cli("simulate", *SMALL, "--replicas", "2", "--workload", "all")
    assert r.exit_code == 2 and "--replicas" in r.stderr
    r = run_cli("simulate", *SMALL, "--replicas", "2", "--oracle")
    assert r.exit_code == 2 and "--oracle" in r.stderr


def test_plot_draws_a_png(tmp_path: Path) -> None:
    out = tmp_path / "fleet.png"
    r = run_cli("simulate", *SMALL, "-p", "lru", "--replicas", "3", "--plot", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_routers_lists_every_registered_router() -> None:
    r = run_cli("routers", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [x["name"] for x in data["routers"]] == list(routers())
    ca = next(x for x in data["routers"] if x["name"] == "cache_aware")
    assert ca["config"]["cache_threshold"] == 0.3
    r = run_cli("routers")
    assert r.exit_code == 0 and "round_robin" in r.stdout
