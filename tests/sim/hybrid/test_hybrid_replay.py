"""Hybrid replays: a workload through a model layout's cache, figures per component."""

from __future__ import annotations

import pytest

from radix_evict.sim.hybrid_replay import (
    build_spec,
    free_out,
    replay_hybrid,
    state_len,
)
from radix_evict.sim.models.presets import preset
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

WL = get_workload("chat", seed=0, convs=150)


def spec(arch: str, page: int = 1, **kw: object) -> object:
    args = dict(kv_memory=None, pool_tokens=100_000, default_tokens=WL.default_pool_tokens,
                page_size=page, swa_ratio=None, mamba_ratio=None)  # fmt: skip
    args.update(kw)
    return build_spec(preset(arch), **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("page", "policy"), [(1, "lru"), (16, "lru"), (1, "lfu"),
                                              (16, "priority"), (1, "fifo")])  # fmt: skip
def test_a_full_attention_layout_replays_as_the_radix_cache(page: int, policy: str) -> None:
    """Llama 3 8B through the hybrid cache = today's replay through RadixCache."""
    mine = replay_hybrid(WL, spec("llama-3-8b", page, pool_tokens=30_000), policy)  # type: ignore[arg-type]
    today = replay(WL, policy, pool_tokens=30_000, page_size=page)
    assert (mine.hit_tokens, mine.prompt_tokens) == (today.hit_tokens, today.prompt_tokens)
    assert mine.evicted_full == today.evicted_tokens
    assert mine.full_hit_tokens == mine.hit_tokens


@pytest.mark.parametrize("arch", ["gpt-oss-120b", "gemma-3-27b", "qwen3-next-80b-a3b"])
def test_hybrid_layouts_reuse_less_than_full_kv_alone(arch: str) -> None:
    r = replay_hybrid(WL, spec(arch, 16), "lru")  # type: ignore[arg-type]
    assert r.admitted + r.failed == r.requests == WL.num_requests
    assert r.failed <= r.requests // 20  # Qwen3-Next's few states turn a few away
    assert 0 < r.hit_tokens < r.full_hit_tokens
    assert r.evicted_aux > 0


def test_pools_from_bytes_or_tokens() -> None:
    by_tokens = spec("gpt-oss-120b")
    assert by_tokens.pools.full_tokens == 100_000  # type: ignore[attr-defined]
    assert by_tokens.pools.swa_tokens == 80_000  # type: ignore[attr-defined]
    by_bytes = spec("qwen3-next-80b-a3b", kv_memory="40GiB", pool_tokens=None)
    assert by_bytes.pools.mamba_states == 263 and by_bytes.kv_bytes == 40 * 2**30  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="not both"):
        spec("gpt-oss-120b", kv_memory="1GiB")


def test_operation_rules() -> None:
    # (start, new): the request frees [start, new) of its own window KV
    assert free_out(0, 0, pre_len=100, window=128, page=1) == (0, 0)  # not a window past yet
    assert free_out(0, 16, pre_len=299, window=128, page=16) == (16, 160)
    assert free_out(0, 200, pre_len=299, window=128, page=16) == (200, 200)  # the tree's part
    assert free_out(160, 16, pre_len=299, window=128, page=16) == (160, 160)
    assert state_len(prompt=100, total=130, page=1) == 130
    assert state_len(prompt=100, total=130, page=16) == 64
    assert state_len(prompt=100, total=600, page=16) == 512


def test_a_policy_the_hybrid_tree_cannot_score_is_named() -> None:
    with pytest.raises(ValueError, match=r"tlru.*(history_len|prefix_len|num_tok)"):
        tlru = {"threshold": 1024, "next_prompt_estimate": 128}
        replay_hybrid(WL, spec("gpt-oss-120b"), "tlru", tlru)  # type: ignore[arg-type]


def test_prefill_work_is_reported_per_component() -> None:
    gpt = replay_hybrid(WL, spec("gpt-oss-120b", 16), "lru")  # type: ignore[arg-type]
    assert gpt.prefill_full_pairs > gpt.prefill_window_pairs > 0  # a window of 128 is cheap
    assert gpt.prefill_recurrent_tokens == 0
    qwen = replay_hybrid(WL, spec("qwen3-next-80b-a3b", 16), "lru")  # type: ignore[arg-type]
    assert qwen.prefill_window_pairs == 0 and qwen.prefill_recurrent_tokens > 0
    uncached = qwen.prompt_tokens - qwen.hit_tokens  # refused requests recompute nothing here
    assert qwen.prefill_recurrent_tokens <= 36 * uncached
