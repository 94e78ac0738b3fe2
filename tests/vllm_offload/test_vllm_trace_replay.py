"""Mooncake traces (../shared/traces) through vLLM 0.33.0's CPU offload manager, with vLLM's lru
and arc and radix-evict's lru, gdsf and reuse through the adapter (bench/bench_vllm_offload.py
makes docs/vllm.md's table from the whole traces)."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from radix_evict.vllm.launch import build_manager
from radix_evict.vllm.replay import ReplayResult, mooncake_chains, replay

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
POLICIES = ["lru", "arc", "radix_evict_lru", "radix_evict_gdsf", "radix_evict_reuse"]
TRACE_FILES = sorted(TRACES.glob("*.jsonl")) if TRACES.is_dir() else []


def run(policy: str, chains: list[list[int]], capacity: int) -> tuple[ReplayResult, object]:
    ours = policy.startswith("radix_evict_")
    module = {"cache_policy_module_path": "radix_evict.vllm"} if ours else {}
    manager = build_manager({"eviction_policy": policy, **module}, num_chunks=capacity)
    return replay(manager, chains, concurrency=2), manager._policy


@pytest.fixture(params=TRACE_FILES or [None], ids=lambda p: p.stem if p else "absent")
def chains(request: pytest.FixtureRequest) -> list[list[int]]:
    if request.param is None:
        pytest.skip(f"no Mooncake traces under {TRACES}")
    return mooncake_chains(str(request.param), limit=1500)


def test_every_policy_replays_a_trace(vllm: types.ModuleType, chains: list[list[int]]) -> None:
    results = {p: run(p, chains, 2048) for p in POLICIES}
    for policy, (out, cache) in results.items():
        assert out.requests == 1500 and out.evicted > 0, policy
        assert 0 < out.hit_rate < 1, policy
        if policy.startswith("radix_evict_"):
            assert cache.tree.problems() == [], policy  # type: ignore[attr-defined]
    lru, ours = results["lru"][0], results["radix_evict_lru"][0]
    # Chained hashes make every trace request a prefix path: the tree's LRU and vLLM's agree.
    assert (ours.hit_chunks, ours.evicted) == (lru.hit_chunks, lru.evicted)
