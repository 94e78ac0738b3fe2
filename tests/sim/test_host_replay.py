"""Replays with a host tier: the one-tier replay when the tier is empty, figures that add up,
copies that cost time in the timed replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from radix_evict.cache.host_tier import WRITE_POLICIES, HostTierSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.cost import CostModelError, load_cost_model
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload, load_trace

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
TRACE = TRACES / "mooncake_conversation_trace.jsonl"
CPU_TIMES = {"cache_s", "eviction_s", "wall_s", "req_per_s"}


def figures(result: Any) -> dict[str, Any]:
    """A result's figures without the CPU times (and the counters' seconds)."""
    d = {k: v for k, v in result.to_dict().items() if k not in CPU_TIMES}
    d["stats"] = {k: v for k, v in d["stats"].items() if k != "eviction_seconds"}
    return d


@pytest.fixture(scope="module")
def chat() -> Any:
    return get_workload("chat", seed=3, convs=40)


@pytest.mark.parametrize("policy", ["lru", "lfu", "slru", "priority"])
@pytest.mark.parametrize("page", [1, 16])
def test_a_host_tier_of_less_than_a_page_is_the_one_tier_replay(chat: Any, policy: str,
                                                                page: int) -> None:
    one = replay(chat, policy, page_size=page, pool_tokens=20_000)
    for host in (HostTierSpec(tokens=0), HostTierSpec(tokens=page - 1 if page > 1 else 0,
                                                      write_policy="write_back")):
        two = replay(chat, policy, page_size=page, pool_tokens=20_000, host=host)
        assert two.host is None
        assert figures(two) == figures(one)


def test_the_timed_replay_too(chat: Any) -> None:
    timing = TimingSpec()
    one = replay(chat, "lru", pool_tokens=20_000, timing=timing)
    two = replay(chat, "lru", pool_tokens=20_000, timing=timing, host=HostTierSpec(tokens=0))
    assert figures(two) == figures(one)


@pytest.mark.parametrize("write_policy", WRITE_POLICIES)
def test_hits_split_between_the_tiers_and_add_up(chat: Any, write_policy: str) -> None:
    one = replay(chat, "lru", pool_tokens=20_000)
    two = replay(chat, "lru", pool_tokens=20_000,
                 host=HostTierSpec(ratio=2.0, write_policy=write_policy))
    h = two.host
    assert h is not None
    assert h.host_tokens == 40_001  # SGLang's size: floor(20,000 x 2) + a page
    assert h.device_hit_rate + h.host_hit_rate + h.miss_rate == pytest.approx(1.0)
    assert h.device_hit_tokens + h.host_hit_tokens == two.hit_tokens
    assert 0 < h.host_hit_tokens <= h.loaded_tokens and h.written_tokens > 0
    # a host tier only adds hits: what the device evicts can come back
    assert two.hit_rate > one.hit_rate
    if write_policy == "write_back":
        assert h.reclaimed_tokens > 0
    else:
        assert h.reclaimed_tokens == 0


def test_a_larger_host_tier_hits_more(chat: Any) -> None:
    rates = [replay(chat, "lru", pool_tokens=20_000, host=HostTierSpec(ratio=r)).hit_rate
             for r in (0.5, 1.0, 4.0)]
    assert rates == sorted(rates) and rates[0] < rates[-1]


def test_another_host_policy_changes_host_evictions_only(chat: Any) -> None:
    base = replay(chat, "lru", pool_tokens=20_000, host=HostTierSpec(ratio=1.0))
    mru = replay(chat, "lru", pool_tokens=20_000, host=HostTierSpec(ratio=1.0, policy="mru"))
    assert base.host is not None and mru.host is not None
    assert (base.host.host_policy, mru.host.host_policy) == ("lru", "mru")
    assert mru.host.host_hit_tokens != base.host.host_hit_tokens


def test_load_backs_cost_time_in_the_timed_replay(chat: Any) -> None:
    preset = load_cost_model("llama3-8b-h100")
    fast = preset.model_copy(update={"transfer": preset.transfer.model_copy(  # type: ignore[union-attr]
        update={"host_gbps": 1e9})})
    slow = preset.model_copy(update={"transfer": preset.transfer.model_copy(  # type: ignore[union-attr]
        update={"host_gbps": 0.5})})
    host = HostTierSpec(ratio=2.0, write_policy="write_back")
    a = replay(chat, "lru", pool_tokens=20_000, host=host, timing=TimingSpec(cost_model=fast))
    b = replay(chat, "lru", pool_tokens=20_000, host=host, timing=TimingSpec(cost_model=slow))
    assert a.host is not None and b.host is not None
    assert a.host.copy_wait_s < 1e-3 < b.host.copy_wait_s
    assert b.timing.ttft_ms.p99 > a.timing.ttft_ms.p99


def test_a_timed_replay_with_a_host_tier_needs_a_transfer_table(chat: Any) -> None:
    preset = load_cost_model("llama3-8b-h100").model_copy(update={"transfer": None})
    with pytest.raises(CostModelError, match=r"no \[transfer\] table"):
        replay(chat, "lru", pool_tokens=20_000, host=HostTierSpec(ratio=1.0),
               timing=TimingSpec(cost_model=preset))


@pytest.mark.skipif(not TRACE.exists(), reason="needs ../shared/traces")
@pytest.mark.parametrize("page", [16, 512])
def test_a_mooncake_trace_through_two_tiers(page: int) -> None:
    w = load_trace(TRACE, limit=600)
    one = replay(w, "lru", page_size=page, pool_tokens=200_000)
    two = replay(w, "lru", page_size=page, pool_tokens=200_000, host=HostTierSpec(ratio=2.0))
    assert two.host is not None and two.host.host_hit_tokens > 0
    assert two.hit_rate > one.hit_rate
