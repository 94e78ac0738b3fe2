"""CLI: ``radix-evict simulate --pool-curve``: lru at many pool sizes from one replay.

Each point equals ``simulate -p lru --pool-tokens S``'s figures; the table says
which sizes the pass computed and which were replayed on their own; the
options the curve cannot stand for are refused, saying why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli, simulate_json

SMALL = ["--param", "convs=30"]
SIZES = "8K..64K*2"  # 8,000 to 64,000 tokens: the small ones fail admissions (own replays)

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("simulate", "--no-progress", *args)


def test_each_point_is_the_per_size_replay() -> None:
    data = simulate_json(*SMALL, "--pool-curve", SIZES)
    assert data["mode"] == "pool-curve" and data["policy"] == "lru"
    points = data["points"]
    assert [p["pool_tokens"] for p in points] == [8_000, 16_000, 32_000, 64_000]
    assert [p["source"] for p in points] == ["replay", "replay", "curve", "curve"]
    assert all(p["inexact"] for p in points[:2]) and not any(p["inexact"] for p in points[2:])
    for p in points:
        (r,) = simulate_json(*SMALL, "-p", "lru", "--pool-tokens",
                             str(p["pool_tokens"]))["results"]
        for key in ("hit_rate", "p50_uncached", "p90_uncached", "p99_uncached",
                    "mean_uncached", "evicted_tokens", "prompt_tokens", "hit_tokens"):
            assert p[key] == r[key], (p["pool_tokens"], key)
        assert p["failed"] == r["failed"]


def test_table_oracle_ceiling_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "curve.png"
    r = run(*SMALL, "--pool-curve", "16K,32K", "--oracle", "--plot", str(plot))
    assert r.exit_code == 0, r.output
    for word in ("pool tokens", "hit rate", "p99 uncached", "oracle", "ceiling", "via"):
        assert word in r.stdout, word
    assert "one Belady replay per pool size" in r.stderr
    assert plot.read_bytes()[:4] == b"\x89PNG"
    data = simulate_json(*SMALL, "--pool-curve", "16K,32K", "--oracle")
    top = data["ceiling_hit_rate"]
    for p in data["points"]:
        assert p["hit_rate"] <= p["oracle_hit_rate"] <= top + 1e-12


@pytest.mark.parametrize(("args", "says"), [
    (["-p", "lfu"], "lru only, not lfu: the inclusion property"),
    (["-p", "lru", "-p", "slru"], "not slru"),
    (["--timing"], "each size needs its own timed replay"),
    (["--host-tokens", "8000"], "not inclusion-preserving"),
    (["--hicache-ratio", "2"], "not inclusion-preserving"),
    (["--pool-tokens", "8000"], "not both"),
    (["--workload", "all"], "one workload or one trace"),
    (["--pool-curve", "1..x"], "--pool-curve"),
])
def test_what_the_curve_cannot_stand_for_is_refused(args: list[str], says: str) -> None:
    r = run(*SMALL, "--pool-curve", SIZES, *args)
    assert r.exit_code == 2, r.output
    assert says in r.stderr, r.stderr
