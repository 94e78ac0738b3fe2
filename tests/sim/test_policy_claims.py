"""Issue 7's policy claims, checked on the default workloads for several seeds.

Each claim is a property of a workload *shape*: it must hold for every seed
below, at the workload's default parameters and default pool. Where a claim
does not hold on the honest workload, the test stays, marked
``xfail(strict=True)`` with the measured figures: the workload is not tuned
until the claim passes, and a change that makes the claim true shows up as
an unexpected pass.
"""

from __future__ import annotations

from functools import cache

import pytest

from radix_evict.sim.replay import ReplayResult, replay
from radix_evict.sim.workloads import get_workload

SEEDS = (0, 1, 2, 3)


@cache
def run(workload: str, seed: int, policy: str) -> ReplayResult:
    """One replay at the workload's defaults (tlru takes the workload's suggested config)."""
    return replay(get_workload(workload, seed=seed), policy, timeline_points=0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("policy", ["slru", "lfu"])
def test_hot_set_with_scans_frequency_beats_recency(policy: str, seed: int) -> None:
    """Scans are seen once; the hot set many times: lfu/slru keep it through a burst."""
    lru = run("hot-set-with-scans", seed, "lru")
    other = run("hot-set-with-scans", seed, policy)
    assert lru.failed == other.failed == 0
    assert other.hit_rate > lru.hit_rate, (policy, other.hit_rate, lru.hit_rate)


@pytest.mark.parametrize("seed", SEEDS)
def test_popularity_shift_recency_beats_frequency(seed: int) -> None:
    """Counts earned before the shift keep the stale hot set alive under lfu."""
    lru = run("popularity-shift", seed, "lru")
    lfu = run("popularity-shift", seed, "lfu")
    assert lru.hit_rate > lfu.hit_rate, (lru.hit_rate, lfu.hit_rate)


@pytest.mark.parametrize("seed", SEEDS)
def test_priority_tiers_priority_protects_the_top_tier(seed: int) -> None:
    """The priority policy gives the top tier a higher hit rate than lru does."""
    lru = run("priority-tiers", seed, "lru")
    prio = run("priority-tiers", seed, "priority")
    top = max(lru.tiers)
    assert top == max(prio.tiers) == 2
    assert prio.tier_hit_rates[top] > lru.tier_hit_rates[top], (
        prio.tier_hit_rates,
        lru.tier_hit_rates,
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_agentic_tlru_hit_rate_within_one_point_of_lru(seed: int) -> None:
    """First half of the tlru claim: the tail protection costs at most one point of hit rate."""
    lru = run("agentic", seed, "lru")
    tlru = run("agentic", seed, "tlru")
    assert tlru.config_source == "workload-suggested"
    assert abs(tlru.hit_rate - lru.hit_rate) <= 0.01, (tlru.hit_rate, lru.hit_rate)


# Measured with the suggested tlru config at the default pool (0.25 x all sessions' final
# history tokens): p99 uncached tokens (lru / tlru), hit rate (lru / tlru).
AGENTIC_P99_MEASURED = {
    0: "p99 12415.8 / 12415.8, hit 0.9023 / 0.8948, tlru {threshold 896, estimate 430}",
    1: "p99 12912.0 / 12912.0, hit 0.8910 / 0.8828, tlru {threshold 896, estimate 423}",
    2: "p99 12313.0 / 12313.0, hit 0.8987 / 0.8916, tlru {threshold 832, estimate 413}",
    3: "p99 12026.4 / 12026.4, hit 0.9045 / 0.8968, tlru {threshold 896, estimate 425}",
}


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(
            s,
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "claim does not hold on the default agentic workload: tlru's p99 uncached "
                    f"equals lru's ({AGENTIC_P99_MEASURED[s]}). About 6% of requests are human "
                    "turns whose whole history was evicted under both policies; tlru's "
                    "TEL-safe tails (threshold - estimate, ~450 tokens a session) are too "
                    "small to absorb that pressure, so the 99th percentile is unchanged"
                ),
            ),
        )
        for s in SEEDS
    ],
)
def test_agentic_tlru_lowers_p99_uncached(seed: int) -> None:
    """Second half of the tlru claim: a lower 99th percentile of uncached prompt tokens."""
    lru = run("agentic", seed, "lru")
    tlru = run("agentic", seed, "tlru")
    assert tlru.p99_uncached < lru.p99_uncached, (tlru.p99_uncached, lru.p99_uncached)
