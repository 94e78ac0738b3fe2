"""The Ray executor, on a real Ray started here: same rows as local processes, failures, resume.

Ray starts once for this module (``ray.init(num_cpus=2)``, ~5 s); its workers
get the test's ``flaky`` policy package on PYTHONPATH, as a cluster's workers
would have a plugin installed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.sweeps import flaky_installed, small_parts, timed_parts

from radix_evict.sim.sweep import (
    comparable,
    local_executor,
    make_grid,
    plan_sweep,
    ray_executor,
    run_sweep,
)
from radix_evict.sim.sweep.ray_executor import (
    PROBE_TIMEOUT_S,
    RayConnectionError,
    probe,
    run_ray,
)
from radix_evict.sim.sweep.sources import build_workloads

ray = pytest.importorskip(
    "ray", reason="Ray is not installed here (pip install 'radix-evict[ray]' or '.[dev]'); "
                  "the Ray executor tests need it")


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with flaky_installed(tmp_path_factory.mktemp("flaky-site")) as site:
        yield site


@pytest.fixture(scope="module")
def cluster(flaky: Path) -> Iterator[str]:
    """A real two-CPU Ray for this module; yields its address for other drivers."""
    if ray.is_initialized():
        ray.shutdown()
    path = os.pathsep.join(p for p in (str(flaky), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=150 * 2**20, runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def test_ray_and_local_processes_give_identical_rows(cluster: str) -> None:
    grid = make_grid(small_parts(references=True))
    local = run_sweep(plan_sweep(grid), local_executor(2))
    remote = run_sweep(plan_sweep(grid), ray_executor())
    assert not remote.failed and len(remote.rows) == 16 + 6  # + oracle x 2 pools, ceiling
    assert [comparable(r) for r in remote.rows] == [comparable(r) for r in local.rows]
    assert all(r["replay_s"] > 0 for r in remote.rows)


def test_timed_cells_give_the_same_figures_on_ray_and_locally(cluster: str) -> None:
    """The timed replay is seeded by the cell: a Ray worker gets the same virtual times."""
    grid = make_grid(timed_parts(references=True, seeds=[0, 1]))
    local = run_sweep(plan_sweep(grid), local_executor(2))
    remote = run_sweep(plan_sweep(grid), ray_executor())
    # 2 seeds x 2 rates x (2 policies, the oracle, the timed ceiling)
    assert not remote.failed and len(remote.rows) == 2 * 2 * (2 + 1 + 1)
    assert [comparable(r) for r in remote.rows] == [comparable(r) for r in local.rows]
    timed = [r for r in remote.rows if r["policy"] != "ceiling"]
    assert all(r["ttft_p99_ms"] > 0 and r["cost_model"] for r in timed)
    by_seed = {(r["policy"], r["rate"], r["seed"]): r["ttft_p99_ms"] for r in timed}
    assert by_seed[("lru", 2.0, 0)] != by_seed[("lru", 2.0, 1)]  # the seed is the cell's


def test_failing_cells_on_ray_are_recorded_and_the_rest_go_on(cluster: str) -> None:
    parts = small_parts(policies=["lru", "flaky"],
                        vary={"flaky": {"mode": ["ok", "raise", "exit"]}}, traces=[],
                        params=[("chat", "convs", 12)], pool_tokens=[20_000])
    rows = run_sweep(plan_sweep(make_grid(parts)), ray_executor()).rows
    by = {json.dumps(r["config"]): r for r in rows}
    assert by["null"]["status"] == by['{"mode": "ok"}']["status"] == "ok"
    error = by['{"mode": "raise"}']["error"]  # the driver's PolicyError names the policy
    assert error.startswith("PolicyError: policy 'flaky' ")
    assert error.endswith("score() raised RuntimeError: flaky policy raised on purpose")
    died = by['{"mode": "exit"}']
    assert died["status"] == "error" and died["error"]  # Ray's worker-died error, first line
    assert by["null"]["hit_rate"] == by['{"mode": "ok"}']["hit_rate"]


def test_stopping_early_cancels_the_rest(cluster: str) -> None:
    plan = plan_sweep(make_grid(small_parts()))
    rows = run_ray(plan.todo, build_workloads(plan.todo))
    first = next(rows)
    rows.close()  # what Ctrl-C does through run_sweep
    assert first["status"] == "ok"
    assert ray.available_resources().get("CPU", 0) <= 2


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "radix-evict"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "radix_evict.cli"]


def test_resume_on_ray_skips_finished_cells(cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    first = run_sweep(plan_sweep(make_grid(small_parts(pool_tokens=[20_000])), out),
                      ray_executor())
    assert first.ran == 8
    plan = plan_sweep(make_grid(small_parts()), out)
    assert len(plan.kept) == 8 and {c.pool_tokens for c in plan.todo} == {100_000}
    second = run_sweep(plan, ray_executor())
    assert second.ran == 8 and len(second.rows) == 16 and not second.failed


def test_cli_joins_an_existing_cluster(cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    done = subprocess.run(
        [*_cli(), "sweep", "-p", "lru,slru", "-P", "convs=12", "--pool-tokens", "20K,100K",
         "--out", str(out), "--ray", cluster, "--json"],
        capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert f"on Ray tasks ({cluster})" in done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert (data["cells"], data["ran"], data["failed"]) == (4, 4, 0)
    local = run_sweep(plan_sweep(make_grid(small_parts(
        policies=["lru", "slru"], vary={}, traces=[], params=[(None, "convs", 12)]))),
        local_executor(2)).rows
    assert [comparable(r) for r in data["rows"]] == [comparable(r) for r in local]
    assert len(out.read_text().splitlines()) == 5


def _closed_port() -> int:
    """A local port nothing listens on (bound once, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_address_where_nothing_listens_fails_fast_naming_it() -> None:
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(RayConnectionError, match=rf"nothing answers at 127.0.0.1:{port}"):
        probe(f"127.0.0.1:{port}")
    with pytest.raises(RayConnectionError, match="nothing answers"):
        probe(f"ray://127.0.0.1:{port}")
    assert time.monotonic() - started < 2 * PROBE_TIMEOUT_S
    probe("auto")  # left to Ray: no probe


def test_an_address_that_accepts_but_never_answers_fails_in_seconds(cluster: str) -> None:
    with socket.socket() as silent:  # listens (the kernel accepts) but never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(RayConnectionError, match=rf"nothing answers at 127.0.0.1:{port} "
                                                     "within"):
            probe(f"127.0.0.1:{port}")
        assert time.monotonic() - started < 2 * PROBE_TIMEOUT_S
    probe(cluster)  # a real GCS answers gRPC's first frame


def test_ray_retries_for_seconds_not_twenty() -> None:
    from radix_evict.sim.sweep import ray_executor as rx

    code = ("import os, ray._private.ray_constants as c; "
            "print(os.environ.get('RAY_NUM_REDIS_GET_RETRIES'), c.NUM_REDIS_GET_RETRIES)")
    env = {k: v for k, v in os.environ.items() if k != rx.GET_RETRIES_ENV}
    prelude = "from radix_evict.sim.sweep.ray_executor import import_ray; import_ray(); "
    done = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.stdout.split() == [rx.GET_RETRIES, rx.GET_RETRIES], done.stderr


def test_cli_reports_a_cluster_that_is_not_there_in_one_line(tmp_path: Path) -> None:
    port = _closed_port()
    done = subprocess.run(
        [*_cli(), "sweep", "-p", "lru", "-P", "convs=12", "--pool-tokens", "20K",
         "--out", str(tmp_path / "rows.csv"), "--ray", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"--ray 127.0.0.1:{port}: cannot connect: nothing answers" in done.stderr
    assert "Traceback" not in done.stderr and "rpc_client" not in done.stderr
