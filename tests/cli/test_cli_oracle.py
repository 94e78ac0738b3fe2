"""CLI: ``radix-evict simulate --oracle``: the oracle row, the ceiling and gap_closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli, simulate_json

SMALL = ["--param", "convs=30", "--pool-tokens", "6000"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("simulate", *args)



def test_oracle_row_ceiling_and_gap_closed_in_json() -> None:
    data = simulate_json(*SMALL, "-p", "lru", "-p", "lfu", "--oracle")
    rows = {r["policy"]: r for r in data["results"]}
    assert list(rows) == ["lru", "lfu", "oracle"]
    assert data["policies"] == ["lru", "lfu"], "the oracle is a reference row, not a policy run"
    oracle, lru, lfu = rows["oracle"], rows["lru"], rows["lfu"]
    ceiling = data["ceiling"]
    assert lru["hit_rate"] <= oracle["hit_rate"] <= ceiling["hit_rate"] <= 1
    assert ceiling["prompt_tokens"] == lru["prompt_tokens"]
    assert lru["gap_closed"] == 0 and oracle["gap_closed"] == pytest.approx(1)
    gap = oracle["hit_rate"] - lru["hit_rate"]
    assert lfu["gap_closed"] == pytest.approx((lfu["hit_rate"] - lru["hit_rate"]) / gap)
    assert data["recommendation"]["policy"] != "oracle"


def test_oracle_in_the_matrix_and_the_tables(tmp_path: Path) -> None:
    data = simulate_json("--workload", "chat,priority-tiers", "-P", "chat.convs=20",
                    "-P", "priority-tiers.requests=100", "-p", "lfu", "--oracle")
    assert set(data["ceiling"]) == {"chat", "priority-tiers"}
    oracles = [r for r in data["results"] if r["policy"] == "oracle"]
    assert sorted(r["workload"] for r in oracles) == ["chat", "priority-tiers"]
    assert all("oracle" not in w for w in data["winners"].values())
    r = run(*SMALL, "-p", "lru", "--oracle", "--plot", str(tmp_path / "p.png"))
    assert r.exit_code == 0, r.output
    assert "oracle" in r.stdout and "gap closed" in r.stdout and "ceiling" in r.stdout
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_oracle_is_not_a_policy_name() -> None:
    r = run(*SMALL, "-p", "oracle")
    assert r.exit_code == 1 and "oracle" in r.output
    r = run_cli("validate", "--policy", "oracle")
    assert r.exit_code == 1
