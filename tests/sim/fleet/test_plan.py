"""The capacity plan's search and answers, on fake fleets (a TTFT that falls with N) and,
once the fleet replay exists, on a small built-in workload."""

from __future__ import annotations

import importlib.util
import math

import pytest

from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.fleet.plan import (
    CapacityPlan,
    PlanProbeError,
    PlanSetting,
    Probe,
    plan_capacity,
)
from radix_evict.sim.fleet.plan_search import ReplicaSearch

LRU = PlanSetting.of(PolicyRun("lru"))
TLRU = PlanSetting.of(PolicyRun("tlru"))


def fake_fleet(needs: dict[str, int], calls: list[tuple[str, int]] | None = None):
    """A fleet whose TTFT (ms) is 1000 x needed / N: it meets a 1 s SLO from ``needed`` on."""

    def probe(setting: PlanSetting, n: int) -> Probe:
        if calls is not None:
            calls.append((setting.label, n))
        need = needs[setting.run.name]
        ttft = 1000.0 * need / n
        return Probe(replicas=n, ttft_ms=ttft, ttft_p99_ms=ttft, hit_rate=0.5,
                     gpu_hours=n * 0.1, requests=100)

    return probe


@pytest.mark.parametrize("need", [1, 2, 3, 7, 12, 14, 63, 64, 65, 200, 256])
def test_search_finds_the_fewest_replicas(need: int) -> None:
    calls: list[tuple[str, int]] = []
    plan = plan_capacity([LRU], fake_fleet({"lru": need}, calls), slo_ttft_ms=1000,
                         max_replicas=256)
    (sp,) = plan.settings
    assert sp.replicas == need
    assert sp.answer is not None and sp.answer.replicas == need
    assert len(calls) == len(set(calls))  # no N probed twice
    assert len(calls) <= 2 * math.ceil(math.log2(256)) + 1
    probed = {n for _, n in calls}
    assert need in probed and (need == 1 or need - 1 in probed)  # both sides of the edge seen


def test_search_reports_none_within_the_maximum() -> None:
    plan = plan_capacity([LRU], fake_fleet({"lru": 300}), slo_ttft_ms=1000, max_replicas=100)
    (sp,) = plan.settings
    assert sp.replicas is None and sp.answer is None
    assert sp.best is not None and sp.best.replicas == 100  # the cap was probed
    assert plan.answers() == [
        "lru does not meet p99 TTFT <= 1.00 s within 100 replicas (best reached: 3.00 s at 100)"]


def test_search_starting_above_the_answer_bisects_down() -> None:
    s = ReplicaSearch(1000, 64, start=16)
    while (n := s.next()) is not None:
        s.record(Probe(n, 1000.0 * 5 / n, 0.0, 0.0, 0.0, 1))
    assert s.replicas == 5


def test_answer_line_names_the_saving() -> None:
    plan = plan_capacity([TLRU, LRU], fake_fleet({"lru": 14, "tlru": 12}), slo_ttft_ms=1000)
    assert plan.answers() == ["tlru needs 12 replicas, lru 14: tlru saves 2 GPUs (14%)"]
    assert [s.replicas for s in plan.settings] == [12, 14]


def test_answer_when_no_policy_changes_the_count() -> None:
    plan = plan_capacity([LRU, TLRU], fake_fleet({"lru": 9, "tlru": 9}), slo_ttft_ms=1000)
    assert plan.answers() == ["lru and tlru both need 9 replicas: no policy changes the count"]


def test_answer_when_one_policy_misses() -> None:
    plan = plan_capacity([LRU, TLRU], fake_fleet({"lru": 90, "tlru": 9}), slo_ttft_ms=1000,
                         max_replicas=32)
    assert plan.answers() == ["tlru needs 9 replicas, lru more than 32: tlru saves more than "
                              "23 GPUs"]


def test_answer_per_router_and_per_policy() -> None:
    rr_lru, rr_tlru = (PlanSetting.of(PolicyRun(p), "round_robin") for p in ("lru", "tlru"))
    ca_lru, ca_tlru = (PlanSetting.of(PolicyRun(p), "cache_aware") for p in ("lru", "tlru"))
    needs = {("lru", "round_robin"): 20, ("tlru", "round_robin"): 16,
             ("lru", "cache_aware"): 10, ("tlru", "cache_aware"): 10}

    def probe(s: PlanSetting, n: int) -> Probe:
        ttft = 1000.0 * needs[s.run.name, s.router] / n
        return Probe(n, ttft, ttft, 0.5, 1.0, 10)

    plan = plan_capacity([rr_lru, rr_tlru, ca_lru, ca_tlru], probe, slo_ttft_ms=1000)
    assert plan.answers() == [
        "round_robin: tlru needs 16 replicas, lru 20: tlru saves 4 GPUs (20%)",
        "cache_aware: lru and tlru both need 10 replicas: no policy changes the count",
        "lru: cache_aware needs 10 replicas, round_robin 20: cache_aware saves 10 GPUs (50%)",
        "tlru: cache_aware needs 10 replicas, round_robin 16: cache_aware saves 6 GPUs (38%)",
    ]


def test_a_non_monotone_fleet_is_reported() -> None:
    def probe(s: PlanSetting, n: int) -> Probe:  # worse at 4 than at 2: a cache split apart
        ttft = {1: 5000.0, 2: 1500.0, 4: 1800.0}.get(n, 500.0)
        return Probe(n, ttft, ttft, 0.5, 1.0, 10)

    plan = plan_capacity([LRU], probe, slo_ttft_ms=1000)
    assert plan.settings[0].replicas == 5
    notes = plan.notes()
    assert any("not monotone" in n and "at 2 replicas" in n and "at 4" in n for n in notes)


def test_probes_on_worker_processes_give_the_same_plan() -> None:
    fake = fake_fleet({"lru": 14, "tlru": 12})
    one = plan_capacity([LRU, TLRU], fake, slo_ttft_ms=1000)
    two = plan_capacity([LRU, TLRU], fake, slo_ttft_ms=1000, jobs=2)
    assert one.to_json() == two.to_json()


def test_a_failing_probe_names_the_setting_and_count() -> None:
    def probe(s: PlanSetting, n: int) -> Probe:
        if n == 4:
            raise RuntimeError("router said 9")
        return Probe(n, 5000.0, 5000.0, 0.5, 1.0, 10)

    with pytest.raises(PlanProbeError, match=r"lru, round_robin at 4 replicas: RuntimeError"):
        plan_capacity([LRU], probe, slo_ttft_ms=1000)


def test_bad_arguments_are_refused() -> None:
    probe = fake_fleet({"lru": 1})
    with pytest.raises(ValueError, match="percentile"):
        plan_capacity([LRU], probe, slo_ttft_ms=1000, percentile=0)
    with pytest.raises(ValueError, match="slo_ttft_ms"):
        plan_capacity([LRU], probe, slo_ttft_ms=0)
    with pytest.raises(ValueError, match="max_replicas"):
        plan_capacity([LRU], probe, slo_ttft_ms=1000, max_replicas=0)


def test_json_has_every_setting_and_probe() -> None:
    plan = plan_capacity([LRU], fake_fleet({"lru": 3}), slo_ttft_ms=1000)
    data = plan.to_json()
    assert isinstance(plan, CapacityPlan)
    assert data["settings"][0]["replicas"] == 3
    assert [p["replicas"] for p in data["settings"][0]["probes"]] == [1, 2, 3, 4]


HAS_FLEET = importlib.util.find_spec("radix_evict.sim.fleet.replay") is not None


@pytest.mark.skipif(not HAS_FLEET, reason="the fleet replay (sim.fleet.replay) is not built yet")
def test_a_real_plan_on_a_built_in_workload() -> None:
    """Each reported count meets the SLO and one fewer does not (probed by the fleet replay)."""
    from radix_evict.sim.fleet.plan import FleetProbe
    from radix_evict.sim.timed.options import build_timing
    from radix_evict.sim.workloads import get_workload

    wl = get_workload("chat", seed=0, convs=12)
    timing = build_timing(timing=True, seed=0, objective="hit-rate", time_scale=0.05)
    assert timing is not None
    probe = FleetProbe(wl, wl.default_pool_tokens, 1, timing)
    first = probe(LRU, 1)
    slo = first.ttft_ms / 3  # one server cannot meet it
    plan = plan_capacity([LRU], probe, slo_ttft_ms=slo, max_replicas=16)
    (sp,) = plan.settings
    if sp.replicas is None:
        assert sp.best is not None and sp.best.ttft_ms > slo
        return
    assert sp.replicas > 1
    assert probe(LRU, sp.replicas).ttft_ms <= slo
    assert probe(LRU, sp.replicas - 1).ttft_ms > slo


def test_the_table_shows_counts_past_the_maximum_and_host_tiers() -> None:
    from radix_evict.cache.host_tier import HostTierSpec
    from radix_evict.sim.fleet.plan_table import plan_table

    host = PlanSetting.of(PolicyRun("lru"), host=HostTierSpec(tokens=1_000_000))
    plan = plan_capacity([LRU, host], fake_fleet({"lru": 40}), slo_ttft_ms=1000,
                         max_replicas=32, percentile=90)
    t = plan_table(plan)
    names = [c.name for c in t.columns]
    assert names[:3] == ["policy", "router", "host"]
    assert "p90 TTFT" in names and "p99 TTFT" in names
    assert [row[names.index("replicas")] for row in t.rows] == ["> 32", "> 32"]
    assert t.rows[0][names.index("host")] == "none"
    assert "host 1,000,000 tokens" in t.rows[1][names.index("host")]
    assert plan.answers() == [
        "no host tier meets p90 TTFT <= 1.00 s within 32 replicas (best reached: no host "
        "tier, 1.25 s at 32)"]


def test_one_replica_is_singular() -> None:
    plan = plan_capacity([LRU, TLRU], fake_fleet({"lru": 1, "tlru": 1}), slo_ttft_ms=1000)
    assert plan.answers() == ["lru and tlru both need 1 replica: no policy changes the count"]
    solo = plan_capacity([LRU], fake_fleet({"lru": 1}), slo_ttft_ms=1000)
    assert solo.answers() == ["lru needs 1 replica (p99 TTFT 1.00 s; SLO p99 TTFT <= 1.00 s)"]
