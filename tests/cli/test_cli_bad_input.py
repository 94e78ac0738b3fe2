"""CLI: every bad input of issue 14 is a clear message (never ``internal error``), found early.

Early means before the workload is built or replayed: the tests replace
those steps with ones that fail the test if they run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict import EvictionPolicy, PolicySpec, hookimpl, registry
from radix_evict.sim import simulate as sim_simulate

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

SMALL = ["--param", "convs=2", "-p", "lru"]
UNWRITABLE = Path("/sys/kernel")  # sysfs: not writable even for root


cli = run_cli


def assert_clean(r: Any, code: int, *needles: str) -> None:
    assert r.exit_code == code, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    for needle in needles:
        assert needle in r.stderr, r.stderr


@pytest.fixture
def no_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that must come before any replay: replaying fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the replay started before the check")

    monkeypatch.setattr(sim_simulate, "replay_policies", refuse)
    monkeypatch.setattr(sim_simulate, "policy_matrix", refuse)


@pytest.fixture
def no_workload(monkeypatch: pytest.MonkeyPatch, no_replay: None) -> None:
    """A check that must come before the workload is built."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the workload was built before the check")

    monkeypatch.setattr(sim_simulate, "build_workloads", refuse)
    monkeypatch.setattr(sim_simulate, "build_trace", refuse)


def test_config_file_that_is_not_text(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xb0\x00\xff{not json")
    r = cli("validate", "-p", "lru", "-c", f"@{blob}")
    assert_clean(r, 1, "blob.bin is not UTF-8 text", "0xb0")


@pytest.mark.parametrize(("record", "needle"), [
    ({"hash_ids": [2**63]}, "hash_ids[0] = 9223372036854775808 is too large"),
    ({"hash_ids": [2**70]}, "hash_ids[0] = 1180591620717411303424 is too large"),
    ({"output_length": 10**12}, "output_length 1,000,000,000,000"),
])
def test_trace_values_past_what_a_replay_holds_name_file_and_line(
    tmp_path: Path, record: dict[str, Any], needle: str
) -> None:
    good = {"timestamp": 0, "input_length": 512, "output_length": 4, "hash_ids": [1]}
    trace = tmp_path / "big.jsonl"
    trace.write_text(json.dumps(good) + "\n" + json.dumps({**good, **record}) + "\n")
    r = cli("simulate", "--trace", str(trace), "-p", "lru")
    assert_clean(r, 1, f"{trace}:2: ", needle)


def test_pool_smaller_than_a_page_is_found_before_the_workload(no_workload: None) -> None:
    r = cli("simulate", "--pool-tokens", "10", "--page-size", "16")
    assert_clean(r, 2, "--pool-tokens 10 holds no whole page of --page-size 16")


def test_page_larger_than_the_default_pool_is_found_before_the_replay(no_replay: None) -> None:
    r = cli("simulate", "--page-size", "1000000", *SMALL)
    assert_clean(r, 2, "--page-size 1,000,000", "default pool")


@pytest.mark.parametrize(("args", "needle"), [
    (["--pool-tokens", "4X"], "'4X' is not a whole number"),
    (["--pool-tokens", "1.5"], "'1.5' is not a whole"),
    (["--pool-tokens", "0"], "0 is below 1"),
    (["--host-tokens", "-1K"], "'-1K' is not a whole number"),
])
def test_bad_token_sizes_are_named(args: list[str], needle: str, no_workload: None) -> None:
    r = cli("simulate", *args)
    assert_clean(r, 2, f"Invalid value for '{args[0]}'", needle)


def test_pool_larger_than_memory(no_workload: None) -> None:
    r = cli("simulate", "--pool-tokens", "99999999999999999999")
    assert_clean(r, 2, "--pool-tokens 99,999,999,999,999,999,999", "GiB")


@pytest.mark.parametrize("param", ["seed=3", "agentic.seed=3"])
def test_seed_as_a_workload_parameter_points_at_seed(param: str, no_workload: None) -> None:
    r = cli("simulate", "-w", "agentic", "-P", param)
    assert_clean(r, 2, "use --seed 3")


@pytest.mark.skipif(not UNWRITABLE.is_dir(), reason="needs Linux sysfs")
@pytest.mark.parametrize(("option", "name"), [("--plot", "p.png"),
                                              ("--enable-metrics", "m.prom")])
def test_unwritable_outputs_fail_before_the_replay(option: str, name: str,
                                                   no_workload: None) -> None:
    r = cli("simulate", option, str(UNWRITABLE / name), "--json", *SMALL)
    assert_clean(r, 2, f"{option} {UNWRITABLE / name}: cannot write there")
    assert json.loads(r.stdout)["status"] == "error"  # one JSON document


def test_an_output_failing_after_the_replay_leaves_one_json_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from radix_evict.sim import metrics

    def disk_full(path: Path, results: Any) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(metrics, "write_metrics", disk_full)
    r = cli("simulate", "--enable-metrics", str(tmp_path / "m.prom"), "--json", *SMALL)
    assert_clean(r, 2, "No space left on device")
    doc = json.loads(r.stdout)  # raises if stdout holds two documents
    assert doc["status"] == "error" and doc["exit_code"] == 2


def test_a_usage_error_under_json_is_one_json_document() -> None:
    r = cli("simulate", "--json", "--page-size", "0")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["status"] == "error" and "--page-size" in doc["message"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["list", "--json"], ["list"], ["show", "lru", "--json"]])
def test_a_full_stdout_is_a_one_line_error(args: list[str]) -> None:
    env = {**os.environ, "RADIX_EVICT_PLUGINS": ""}
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "radix_evict.cli", *args], stdout=full,
                           stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "error: cannot write the output to stdout: No space left on device"]


class ScoreBlowsUp:
    """A package whose policy 'boom' raises in score() once the cache has some nodes."""

    class Boom(EvictionPolicy):
        name = "boom"
        calls = 0

        def score(self, node: Any) -> float:
            type(self).calls += 1
            if type(self).calls > 50:
                raise ZeroDivisionError("score blew up")
            return float(node.last_access_time)

    @hookimpl
    def radix_evict_register_policies(self, register: Any) -> None:
        register(PolicySpec(name="boom", policy=self.Boom, summary="raises in score()"))

    @hookimpl
    def radix_evict_extend_choices(self, extend: Any) -> None:
        extend("boom")


@pytest.fixture
def boom_plugin() -> Iterator[None]:
    registry.add_plugin(ScoreBlowsUp(), name="boom-ep", distribution="boom-dist", version="0.7")
    yield
    registry.remove_plugin("boom-ep")


@pytest.mark.usefixtures("boom_plugin")
@pytest.mark.parametrize("workloads", [
    ["--param", "convs=30", "--pool-tokens", "6000"],
    ["-w", "chat,popularity-shift", "--param", "chat.convs=30", "--param",
     "popularity-shift.requests=300", "--pool-tokens", "6000"],
])
@pytest.mark.parametrize("jobs", ["1", "3"])
def test_a_policy_whose_score_raises_is_named_and_the_others_kept(
    workloads: list[str], jobs: str
) -> None:
    r = cli("simulate", "-p", "lru", "-p", "boom", "-p", "lfu", "--jobs", jobs, "--json",
            *workloads)
    assert_clean(r, 2, "policy 'boom'", "boom-dist 0.7", "score blew up",
                 "its results are left out")
    doc = json.loads(r.stdout)  # one document, with the others' figures
    assert {x["label"] for x in doc["results"]} == {"lru", "lfu"}
    assert len(doc["results"]) == 2 * (len(workloads) > 4) + 2
    assert doc["failures"] and all(
        f["policy"] == "boom" and "boom-dist 0.7 (entry point 'boom-ep')" in f["error"]
        and "ZeroDivisionError: score blew up" in f["error"] for f in doc["failures"])
    table = cli("simulate", "-p", "lru", "-p", "boom", "--jobs", jobs, *workloads)
    assert_clean(table, 2, "boom-dist")
    assert "lru" in table.stdout and "Recommendation" in table.stdout


@pytest.mark.usefixtures("boom_plugin")
def test_when_every_run_raises_the_error_names_each() -> None:
    r = cli("simulate", "-p", "boom", "--json", "--param", "convs=30", "--pool-tokens", "6000")
    assert_clean(r, 2, "every policy run failed", "boom-dist 0.7", "score blew up")
    doc = json.loads(r.stdout)
    assert doc["status"] == "error" and doc["errors"][0]["policy"] == "boom"
