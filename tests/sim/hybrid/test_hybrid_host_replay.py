"""Hybrid replays with a host tier: the same device pools, plus host copies behind them."""

from __future__ import annotations

import pytest

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.hybrid_replay import build_spec, hybrid_report, replay_hybrid
from radix_evict.sim.hybrid_timed import replay_hybrid_timed
from radix_evict.sim.models.presets import preset
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload

WL = get_workload("chat", seed=0, convs=150)


def spec(arch: str, page: int, pool_tokens: int = 20_000) -> object:
    return build_spec(preset(arch), kv_memory=None, pool_tokens=pool_tokens,
                      default_tokens=WL.default_pool_tokens, page_size=page, swa_ratio=None,
                      mamba_ratio=None)  # fmt: skip


@pytest.mark.parametrize(("arch", "page", "write_policy"), [
    ("gpt-oss-120b", 1, "write_through"), ("gpt-oss-120b", 16, "write_through_selective"),
    ("qwen3-next-80b-a3b", 16, "write_through"), ("llama-3-8b", 1, "write_through"),
])  # fmt: skip
def test_a_host_tier_adds_hits_at_the_same_device_pool(arch: str, page: int,
                                                       write_policy: str) -> None:
    """The host copies serve prefixes the device evicted; the accounting closes at the end
    (the replay checks device and host ledgers against the tree)."""
    s = spec(arch, page)
    without = replay_hybrid(WL, s, "lru")  # type: ignore[arg-type]
    host = HostTierSpec(ratio=2.0, write_policy=write_policy)
    with_host = replay_hybrid(WL, s, "lru", host=host)  # type: ignore[arg-type]
    assert with_host.prompt_tokens == without.prompt_tokens
    assert with_host.hit_tokens >= without.hit_tokens
    assert 0 < with_host.host_hit_tokens <= with_host.hit_tokens
    assert with_host.host is not None and with_host.host["load_backs"] > 0
    assert without.host is None and without.host_hit_tokens == 0


def test_the_report_shows_what_came_from_host() -> None:
    s = spec("gpt-oss-120b", 16)
    rep = hybrid_report(WL, s, [("lru", None)], host=HostTierSpec(ratio=2.0))  # type: ignore[arg-type]
    cols = [c.name for c in rep.table().columns]
    assert "from host" in cols
    assert rep.to_json()["results"][0]["host_hit_rate"] > 0


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "qwen3-next-80b-a3b"])
def test_the_timed_replay_loads_host_hits_back(arch: str) -> None:
    """The timed server on the hybrid tree with a host tier: the accounting closes (device
    and host), load-backs serve prefixes, and the copies are timed."""
    timing = TimingSpec()
    s = spec(arch, 16)
    run, figures = replay_hybrid_timed(WL, s, "lru", None, timing,  # type: ignore[arg-type]
                                       HostTierSpec(ratio=2.0))  # fmt: skip
    assert run.host is not None and run.host["load_backs"] > 0
    assert 0 < run.host_hit_tokens <= run.hit_tokens
    assert figures.ttft_ms.p99 > 0


@pytest.mark.parametrize(("page", "policy", "write_policy"), [
    (1, "lru", "write_through"), (16, "lru", "write_through_selective"),
    (16, "lfu", "write_through"),
])  # fmt: skip
def test_a_full_attention_layout_gives_the_plain_host_tiers_figures(
    page: int, policy: str, write_policy: str
) -> None:
    """Llama 3 8B with a host tier through the hybrid cache = today's replay through
    RadixCache's host tier (itself exact against SGLang's HiCache)."""
    host = HostTierSpec(ratio=2.0, write_policy=write_policy)
    mine = replay_hybrid(WL, spec("llama-3-8b", page), policy, host=host)  # type: ignore[arg-type]
    today = replay(WL, policy, pool_tokens=20_000, page_size=page, host=host)
    assert (mine.hit_tokens, mine.failed) == (today.hit_tokens, today.failed)
    th = today.host
    assert mine.host is not None and th is not None
    assert mine.host_hit_tokens == th.host_hit_tokens > 0
    assert mine.host["written"][0] == th.written_tokens
    assert mine.host["loaded"][0] == th.loaded_tokens
    assert mine.host["host_evicted"][0] == th.host_evicted_tokens
