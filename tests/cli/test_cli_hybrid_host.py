"""CLI: ``simulate --model-arch`` with a host tier (docs/hybrid.md, "Host tier")."""

from __future__ import annotations

import pytest
from helpers.rigs import run_cli, simulate_json

SMALL = ["--param", "convs=60", "--no-progress", "--pool-tokens", "15000", "-p", "lru"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
def test_host_tokens_add_host_hits(arch: str) -> None:
    plain = simulate_json(*SMALL, "--model-arch", arch, "--page-size", "16")
    host = simulate_json(*SMALL, "--model-arch", arch, "--page-size", "16",
                         "--host-tokens", "45000")  # fmt: skip
    (p,), (h,) = plain["results"], host["results"]
    assert p["host"] is None and h["host"]["written"][0] > 0
    assert h["hit_rate"] >= p["hit_rate"] and h["host_hit_rate"] > 0


def test_the_timed_replay_takes_a_host_tier() -> None:
    data = simulate_json(*SMALL, "--model-arch", "gpt-oss-120b", "--page-size", "16",
                         "--hicache-ratio", "2", "--timing")  # fmt: skip
    (r,) = data["results"]
    assert r["host"]["load_backs"] > 0 and r["timing"]["ttft_ms"]["p99"] > 0


def test_the_table_has_a_from_host_column() -> None:
    r = run_cli("simulate", *SMALL, "--model-arch", "gemma-3-27b", "--hicache-ratio", "2",
                "--write-policy", "write_through_selective")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "from host" in r.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--host-tokens", "45000", "--write-policy", "write_back"], "'write_back' is not modelled"),
    (["--host-tokens", "45000", "--admission", "tinylfu"], "admission is not modelled"),
])  # fmt: skip
def test_what_is_not_modelled_is_named(args: list[str], message: str) -> None:
    r = run_cli("simulate", *SMALL, "--model-arch", "gpt-oss-120b", *args)
    assert r.exit_code != 0
    assert message in r.output, r.output
