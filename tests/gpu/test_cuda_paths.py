"""Every pool, cache, engine and command path on a GPU (marked ``cuda``: skipped without one).

A cuda pool keeps its bookkeeping on the host and hands out slots on the
GPU; these tests hold it to the cpu pool's decisions, its errors and its
numbers. ``bench/gpu_check.py`` runs them first on a GPU machine.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from helpers.device_stream import replay
from helpers.rigs import run_cli

from radix_evict import HostTierSpec, KVPool, RadixCache
from radix_evict.cache.ownership import FREE
from radix_evict.engine import run_engine_replay, tiny_chat_requests

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("spelling", ["cuda", "cuda:0", torch.device("cuda"), 0, None])
def test_every_spelling_of_the_gpu_takes_back_its_own_slots(spelling: Any) -> None:
    pool = KVPool(size=64, page_size=4, device=spelling)
    assert pool.device == torch.device("cuda", torch.cuda.current_device())
    slots = pool.alloc(16)
    assert slots is not None and slots.device == pool.device
    pool.free(slots)
    assert pool.available_size() == 64


@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("policy", ["lru", "lfu", "slru", "priority"])
def test_a_cuda_pool_decides_exactly_as_a_cpu_pool(page_size: int, policy: str) -> None:
    size = 1024 * page_size // 4
    on_cpu = replay(KVPool(size=size, page_size=page_size, device="cpu"), policy)
    assert on_cpu == replay(KVPool(size=size, page_size=page_size, device="cuda"), policy)


@pytest.mark.parametrize("write_policy", ["write_through", "write_back"])
def test_a_cuda_pool_with_a_host_tier_decides_as_a_cpu_pool(write_policy: str) -> None:
    host = HostTierSpec(ratio=2.0, write_policy=write_policy)
    on_cpu = replay(KVPool(size=4096, page_size=16, device="cpu"), "lru", host=host)
    assert any(step[0] == "loaded" for step in on_cpu), "the stream must load back"
    assert on_cpu == replay(KVPool(size=4096, page_size=16, device="cuda"), "lru", host=host)


def test_a_gpu_free_names_the_culprits_like_the_cpu_one() -> None:
    pool = KVPool(size=16, page_size=4, device="cuda")
    cache = RadixCache(pool)
    slots = pool.alloc(8)
    assert slots is not None
    cache.insert(list(range(4)), slots[:4])
    with pytest.raises(ValueError, match=r"slots 0\.\.3 are owned by a cached node"):
        pool.free(slots)
    with pytest.raises(ValueError, match="not whole, aligned pages"):
        cache.insert([7] * 4, slots[4:].flip(0))
    with pytest.raises(ValueError, match="listed more than once"):
        cache.insert([7] * 8, torch.cat([slots[4:], slots[4:]]))
    with pytest.raises(ValueError, match=r"are on cpu but the pool is on cuda:\d"):
        cache.insert([7] * 4, slots[4:].cpu())
    assert cache.insert([7] * 4, slots[4:]) == 0
    assert cache.evict(8) == 8 and pool.available_size() == 16
    assert np.array_equal(pool.slot_owners(), np.full(16, FREE))


def test_a_tensor_on_another_gpu_is_refused_naming_both() -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    pool = KVPool(size=16, device="cuda:0")
    with pytest.raises(ValueError, match="are on cuda:1 but the pool is on cuda:0"):
        pool.free(torch.zeros(2, dtype=torch.int64, device="cuda:1"))


@pytest.mark.parametrize("page_size", [1, 16])
def test_the_tiny_decoder_on_the_gpu_reuses_kv_exactly(page_size: int) -> None:
    reqs = tiny_chat_requests()[:12]
    kw: dict[str, Any] = {"device": "cuda", "page_size": page_size, "record_logits": True,
                          "pool_tokens": 4096}
    cached = run_engine_replay(reqs, "lru", **kw)
    fresh = run_engine_replay(reqs, use_cache=False, **kw)
    on_cpu = run_engine_replay(reqs, "lru", **{**kw, "device": "cpu"})
    assert cached.device.startswith("cuda:") and cached.cached_tokens > 0
    assert cached.hits == on_cpu.hits and cached.generated == fresh.generated
    for a, b in zip(cached.logits, fresh.logits, strict=True):
        assert a is not None and b is not None
        assert torch.allclose(a, b, atol=1e-5), float((a - b).abs().max())


@pytest.mark.parametrize("device", ["auto", "cuda", "cuda:0"])
def test_simulate_model_tiny_runs_on_the_gpu(device: str) -> None:
    r = run_cli("simulate", "--model", "tiny", "--device", device, "-p", "lru", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["device"].startswith("cuda:")
    assert all(row["device"].startswith("cuda:") for row in data["rows"])
