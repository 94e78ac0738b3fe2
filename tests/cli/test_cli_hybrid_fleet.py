"""CLI: a hybrid model's cache on a fleet: ``simulate --model-arch --replicas`` and
``plan --model-arch`` (docs/hybrid.md, "Fleets and capacity plans")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.rigs import run_cli, simulate_json

SMALL = ["--param", "convs=12", "--page-size", "16", "--no-progress"]
OSS = ["--model-arch", "gpt-oss-120b"]
TLRU = ["-p", "tlru", "-c", '{"threshold": 1024, "next_prompt_estimate": 128}']

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def test_one_replica_is_the_one_server_hybrid_timed_replay() -> None:
    """--replicas 1 on the hybrid cache: the fleet's figures are --model-arch --timing's."""
    args = [*SMALL, *OSS, "--kv-memory", "2GiB", "--timing", "-p", "lru"]
    one = simulate_json(*args)["results"][0]
    fleet = simulate_json(*args, "--replicas", "1", "--router", "kv_events")
    (r,) = fleet["results"]
    assert fleet["mode"] == "fleet" and fleet["model_arch"] == "gpt-oss-120b"
    assert fleet["pools"]["full_tokens"] == r["pool_tokens"]
    assert r["fleet"]["ttft_ms"] == one["timing"]["ttft_ms"]
    assert r["hit_rate"] == one["hit_rate"] and r["full_hit_rate"] == one["full_hit_rate"]


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
def test_two_replicas_show_the_reusable_and_the_full_kv_hit_rate(arch: str) -> None:
    r = run_cli("simulate", *SMALL, "--model-arch", arch, "--kv-memory", "1GiB", "--timing",
                "-p", "lru", "--replicas", "2", "--router", "cache_aware")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "2 replicas behind cache_aware" in r.stdout and "full-KV hit" in r.stdout
    assert "lru: per replica" in r.stdout


def test_plan_finds_the_count_for_a_hybrid_model() -> None:
    """gpt-oss at 256 MiB a replica: one replica queues for seconds, two meet 4 s."""
    r = run_cli("plan", *SMALL, *OSS, "--kv-memory", "256MiB", "--slo-ttft", "4000",
                "--router", "cache_aware", "--max-replicas", "8", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    (s,) = json.loads(r.stdout)["settings"]
    assert s["replicas"] == 2
    assert [p["replicas"] for p in s["probes"]] == [1, 2]
    assert s["probes"][0]["ttft_ms"] > 4000 >= s["probes"][1]["ttft_ms"]


def test_plan_out_keeps_hybrid_fleet_rows_and_resumes(tmp_path: Path) -> None:
    """plan --out with a hybrid model: each probe a sweep fleet cell on the model's cache, its
    row naming the model and pools; a rerun takes every probe from the file."""
    out = tmp_path / "plan.jsonl"
    args = ["plan", *SMALL, *OSS, "--kv-memory", "256MiB", "--slo-ttft", "4000",
            "--router", "cache_aware", "--max-replicas", "8", "--json", "--out", str(out)]
    first = run_cli(*args)
    assert first.exit_code == 0, first.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["replicas"] for r in rows) == [1, 2]
    assert all(r["model_arch"] == "gpt-oss-120b" and r["kv_memory"] == "256MiB"
               and r["full_hit_rate"] >= r["hit_rate"] and r["swa_pool_tokens"] > 0
               for r in rows)
    (s,) = json.loads(first.stdout)["settings"]
    assert s["replicas"] == 2
    again = run_cli(*args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["settings"][0]["replicas"] == 2
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2  # nothing replayed again


def test_a_hybrid_fleet_of_one_with_a_host_tier_is_the_one_server_replay() -> None:
    """--replicas 1 with --hicache-ratio on the hybrid cache: the figures of the one-server
    timed replay with that host tier, which hits more than without one."""
    args = [*SMALL, *OSS, "--pool-tokens", "6000", "--timing", "-p", "lru"]
    host = ["--hicache-ratio", "2"]
    one = simulate_json(*args, *host)["results"][0]
    fleet = simulate_json(*args, *host, "--replicas", "1")
    (r,) = fleet["results"]
    assert r["fleet"]["ttft_ms"] == one["timing"]["ttft_ms"]
    assert r["hit_rate"] == one["hit_rate"] and r["full_hit_rate"] == one["full_hit_rate"]
    bare = simulate_json(*args, "--replicas", "1")["results"][0]
    assert r["hit_rate"] > bare["hit_rate"]


def test_plan_sizes_a_hybrid_fleet_with_a_host_tier() -> None:
    r = run_cli("plan", *SMALL, *OSS, "--kv-memory", "256MiB", "--slo-ttft", "4000",
                "--host-tokens", "0,200K", "--max-replicas", "8", "--json")  # fmt: skip
    assert r.exit_code == 0, r.output
    none, tier = json.loads(r.stdout)["settings"]
    assert none["host"] is None and tier["host"].startswith("host 200,000 tokens")
    assert 1 <= tier["replicas"] <= none["replicas"] <= 8
    if tier["replicas"] == none["replicas"]:  # the same count: the host tier hits more
        assert tier["figures"]["hit_rate"] > none["figures"]["hit_rate"]


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("plan", ["--kv-memory", "2GiB"], "go with --model-arch"),
        ("plan", ["--swa-full-tokens-ratio", "0.5"], "--swa-full-tokens-ratio"),
        ("plan", ["--model-arch", "gpt-5"], "unknown model architecture 'gpt-5'"),
        ("plan", [*OSS, "--kv-memory", "lots"], "not a memory size"),
        ("plan", [*OSS, *TLRU], "hybrid tree does not keep"),
        ("simulate", [*OSS, "--timing", "--replicas", "2", "--hicache-ratio", "2",
                      "--write-policy", "write_back"], "'write_back' is not modelled"),
        ("simulate", [*OSS, "--timing", "--replicas", "2", *TLRU], "hybrid tree does not keep"),
        ("simulate", [*OSS, "--replicas", "2"], "give --timing with --replicas"),
    ],
)
def test_bad_options_are_named(command: str, args: list[str], message: str) -> None:
    extra = ["--slo-ttft", "100"] if command == "plan" else []
    r = run_cli(command, *SMALL, *extra, *args)
    assert r.exit_code != 0
    assert message in r.output, r.output
