"""CLI: ``simulate --model-arch`` replays through a hybrid model's cache (docs/hybrid.md)."""

from __future__ import annotations

import pytest
from helpers.rigs import run_cli, simulate_json

from radix_evict.sim.models.presets import preset
from radix_evict.sim.models.sizing import parse_bytes, pool_sizes

SMALL = ["--param", "convs=40", "--no-progress"]
TLRU = '{"threshold": 1024, "next_prompt_estimate": 128}'

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
def test_hit_rate_per_component_and_the_split(arch: str) -> None:
    data = simulate_json(*SMALL, "--model-arch", arch, "--kv-memory", "4GiB", "--page-size", "16")
    sizes = pool_sizes(preset(arch), parse_bytes("4GiB"), 16)
    assert data["pools"] == {"full_tokens": sizes.full_tokens, "swa_tokens": sizes.swa_tokens,
                             "mamba_states": sizes.mamba_states}  # fmt: skip
    assert [r["policy"] for r in data["results"]] == ["lru", "lfu", "slru", "priority"]
    for r in data["results"]:
        assert 0 < r["hit_rate"] < r["full_hit_rate"] <= 1
        assert r["mean_reusable_prefix"] > 0
    assert data["best"] in {"lru", "lfu", "slru", "priority"}


def test_ratios_and_the_table() -> None:
    half = simulate_json(*SMALL, "--model-arch", "gemma-3-27b", "--pool-tokens", "60000",
                         "--swa-full-tokens-ratio", "0.5", "-p", "lru")  # fmt: skip
    assert half["pools"]["swa_tokens"] == 30000 and half["pools"]["full_tokens"] == 60000
    r = run_cli("simulate", *SMALL, "--model-arch", "gemma-3-27b", "--pool-tokens", "60000",
                "-p", "lru")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "reusable hit rate" in r.stdout and "full-KV hit rate" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model-arch", "gpt-5"], "unknown model architecture 'gpt-5'"),
        (["--model-arch", "gpt-oss-120b", "--oracle"], "does not go with --oracle"),
        (["--model-arch", "gpt-oss-120b", "--timing", "-p", "tlru", "-c", TLRU],
         "hybrid tree does not keep"),
        (["--model-arch", "gpt-oss-120b", "--kv-memory", "lots"], "not a memory size"),
        (["--model-arch", "gpt-oss-120b", "-p", "tlru", "-c", TLRU], "hybrid tree does not keep"),
        (["--kv-memory", "4GiB"], "go with --model-arch"),
        (["--model-arch", "gpt-oss-120b", "--swa-full-tokens-ratio", "2"], "ratio"),
    ],
)
def test_bad_options_are_named(args: list[str], message: str) -> None:
    r = run_cli("simulate", *SMALL, *args)
    assert r.exit_code != 0
    assert message in r.output, r.output


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
def test_timed_replay_reports_p99_ttft_per_policy(arch: str) -> None:
    """--timing --model-arch: the timed server on the hybrid cache, TTFT per policy."""
    data = simulate_json(*SMALL, "--model-arch", arch, "--kv-memory", "4GiB", "--page-size",
                         "16", "--timing", "-p", "lru", "-p", "lfu")  # fmt: skip
    assert [r["policy"] for r in data["results"]] == ["lru", "lfu"]
    p99 = {r["policy"]: r["timing"]["ttft_ms"]["p99"] for r in data["results"]}
    assert all(v > 0 for v in p99.values())
    assert data["best_by"] == "lowest p99 TTFT" and p99[data["best"]] == min(p99.values())
