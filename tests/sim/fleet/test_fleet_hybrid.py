"""Fleets on a hybrid model's cache: each replica the one-server hybrid timed replay's server."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from radix_evict.cache.hybrid.node import FULL, SWA
from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.fleet.hybrid import replay_hybrid_fleet
from radix_evict.sim.fleet.plan import FleetProbe, PlanSetting
from radix_evict.sim.fleet.replay import FleetSpec
from radix_evict.sim.hybrid_replay import HybridSpec, build_spec
from radix_evict.sim.hybrid_timed import HybridServing, replay_hybrid_timed
from radix_evict.sim.models.presets import preset
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload

WL = get_workload("chat", seed=0, convs=12)
T = TimingSpec()
ARCHS = ["gpt-oss-120b", "qwen3-next-80b-a3b", "gemma-3-27b", "llama-3-8b"]


def spec(arch: str, kv: str = "2GiB", page: int = 16) -> HybridSpec:
    return build_spec(preset(arch), kv_memory=kv, pool_tokens=None,
                      default_tokens=WL.default_pool_tokens, page_size=page, swa_ratio=None,
                      mamba_ratio=None)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("router", ["round_robin", "cache_aware", "kv_events"])
def test_one_replica_is_the_hybrid_timed_replay(arch: str, router: str) -> None:
    """A fleet of one on the hybrid cache gives exactly replay_hybrid_timed's figures."""
    s = spec(arch)
    run, fig = replay_hybrid_timed(WL, s, "lru", None, T)
    f = replay_hybrid_fleet(WL, PolicyRun("lru"), s, timing=T,
                            fleet=FleetSpec(1, router))
    assert asdict(f.fleet) == asdict(fig)
    assert f.fleet.ttft_ms.p99 == fig.ttft_ms.p99 and f.fleet.ttft_ms.p50 == fig.ttft_ms.p50
    assert (f.hit_tokens, f.prompt_tokens) == (run.hit_tokens, run.prompt_tokens)
    assert f.hit_rate == run.hit_rate and f.full_hit_rate == run.full_hit_rate
    assert f.pool_tokens == s.pools.full_tokens


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
@pytest.mark.parametrize("router", ["round_robin", "cache_aware", "kv_events", "least_load"])
def test_two_replicas_serve_every_request(arch: str, router: str) -> None:
    """Two replicas: every request served or refused once, both used, accounting closed
    (replay_hybrid_fleet raises if a slot is left unaccounted for on either)."""
    f = replay_hybrid_fleet(WL, PolicyRun("lru"), spec(arch, "1GiB"), timing=T,
                            fleet=FleetSpec(2, router))
    assert f.requests == WL.num_requests == sum(r.requests for r in f.per_replica)
    assert all(r.requests > 0 for r in f.per_replica)
    assert f.full_hit_rate is not None and 0 < f.hit_rate <= f.full_hit_rate <= 1
    assert f.to_json()["full_hit_rate"] == f.full_hit_rate


def test_the_router_reads_the_reusable_prefix_without_a_use() -> None:
    """peek_prefix: what match_prefix would reuse, to the start of a node a match ends
    inside (as RadixTree.locate), and nothing split or stamped."""
    tree = HybridServing(spec("gpt-oss-120b"), "lru", None).cache
    key = np.arange(256, dtype=np.int64)
    assert tree.peek_prefix(key) == 0
    tree.pools.alloc(FULL, 256)
    tree.pools.alloc(SWA, 256)
    tree.insert(key)
    stamps = [(n.key.tobytes(), n.last_access_time) for n in tree.nodes()]
    assert tree.peek_prefix(key) == 256 and tree.peek_prefix(key[:192]) == 128
    assert [(n.key.tobytes(), n.last_access_time) for n in tree.nodes()] == stamps
    assert tree.match_prefix(key).prefix_len == 256
    assert tree.match_prefix(key[:192]).prefix_len == tree.peek_prefix(key[:192]) == 192


def test_a_plan_probe_replays_the_hybrid_fleet() -> None:
    """FleetProbe with a hybrid spec: its probe at one replica is the one-server replay's."""
    s = spec("gpt-oss-120b")
    _, fig = replay_hybrid_timed(WL, s, "lru", None, T)
    probe = FleetProbe(WL, s.pools.full_tokens, s.page_size, T, hybrid=s)
    p = probe(PlanSetting.of(PolicyRun("lru"), "round_robin"), 1)
    assert p.ttft_ms == fig.ttft_ms.p99
