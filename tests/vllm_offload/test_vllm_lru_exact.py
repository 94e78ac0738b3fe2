"""On a stream where every request is one fresh chain, radix-evict's lru through the adapter
makes vLLM's LRU decisions exactly: the same chunks evicted at every store, the same hits."""

from __future__ import annotations

import random
import types

import pytest

from radix_evict.vllm.launch import build_manager
from radix_evict.vllm.replay import ReplayResult, replay


def fresh_chains(seed: int, n: int) -> list[list[int]]:
    rng = random.Random(seed)
    out, next_id = [], 0
    for _ in range(n):
        size = rng.randint(1, 12)
        out.append(list(range(next_id, next_id + size)))
        next_id += size
    return out


def run(policy: str, chains: list[list[int]], capacity: int, concurrency: int) -> ReplayResult:
    module = {} if policy == "lru" else {"cache_policy_module_path": "radix_evict.vllm"}
    manager = build_manager({"eviction_policy": policy, **module}, num_chunks=capacity)
    return replay(manager, chains, concurrency=concurrency, record=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("concurrency", [1, 3])
def test_fresh_chains_evict_as_vllms_lru(vllm: types.ModuleType, seed: int,
                                         concurrency: int) -> None:
    chains = fresh_chains(seed, 300)
    ours = run("radix_evict_lru", chains, 40, concurrency)
    theirs = run("lru", chains, 40, concurrency)
    assert ours.evicted > 100  # the tier was full most of the time: decisions were made
    assert ours.evictions == theirs.evictions
    assert ours.hits == theirs.hits and ours.failed_stores == theirs.failed_stores


def test_the_check_can_fail(vllm: types.ModuleType) -> None:
    """mru through the adapter evicts differently: the comparison above sees decisions."""
    chains = fresh_chains(0, 300)
    assert run("radix_evict_mru", chains, 40, 1).evictions != run("lru", chains, 40, 1).evictions
