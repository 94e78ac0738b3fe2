"""Timed replays on a hybrid model's cache: the timed server through hybrid_seam's adapter."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from radix_evict.sim import hybrid_timed
from radix_evict.sim.hybrid_replay import build_spec
from radix_evict.sim.hybrid_timed import replay_hybrid_timed
from radix_evict.sim.models.presets import preset
from radix_evict.sim.models.work import prefill_work
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.cost import attention_pairs
from radix_evict.sim.timed.hybrid_seam import hybrid_pairs
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import get_workload

WL = get_workload("chat", seed=0, convs=60)
T = TimingSpec()


def spec(arch: str, page: int, pool: int) -> object:
    return build_spec(preset(arch), kv_memory=None, pool_tokens=pool,
                      default_tokens=WL.default_pool_tokens, page_size=page, swa_ratio=None,
                      mamba_ratio=None)


@pytest.mark.parametrize(("page", "policy"), [(1, "lru"), (16, "lru"), (16, "lfu"),
                                              (1, "priority")])
def test_llama_through_the_hybrid_path_is_todays_timed_replay(page: int, policy: str) -> None:
    """Llama 3 8B (full attention only) through the seam = today's timed replay, figure
    for figure."""
    run, fig = replay_hybrid_timed(WL, spec("llama-3-8b", page, 20_000), policy, None,  # type: ignore[arg-type]
                                   T)
    today = replay(WL, policy, pool_tokens=20_000, page_size=page, timing=T)
    assert today.timing is not None
    assert asdict(fig) == asdict(today.timing)
    assert (run.hit_tokens, run.prompt_tokens) == (today.hit_tokens, today.prompt_tokens)
    assert run.evicted_full == today.evicted_tokens


def test_pairs_per_component() -> None:
    """Full layouts pay every pair; window layers at most their window; recurrent none."""
    llama, oss, qwen = (hybrid_pairs(preset(a)) for a in
                        ("llama-3-8b", "gpt-oss-120b", "qwen3-next-80b-a3b"))
    for c, n in ((0, 100), (500, 700), (3000, 1)):
        assert llama(c, n) == attention_pairs(c, n)
    assert oss(0, 100) == attention_pairs(0, 100)  # inside the window: the same
    assert oss(500, 700) < attention_pairs(500, 700)
    w = prefill_work(preset("gpt-oss-120b"), 500, 700)
    assert oss(500, 700) == (w.full_pairs + w.window_pairs) / 36
    assert qwen(500, 700) == attention_pairs(500, 700) * 12 / 48


def test_window_layers_make_prefill_cheaper(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt-oss priced per component computes for less time than priced as all full
    attention (same cache, same workload)."""
    s = spec("gpt-oss-120b", 16, 400_000)
    _, per_component = replay_hybrid_timed(WL, s, "lru", None, T)  # type: ignore[arg-type]
    monkeypatch.setattr(hybrid_timed, "hybrid_pairs", lambda layout: attention_pairs)
    _, all_full = replay_hybrid_timed(WL, s, "lru", None, T)  # type: ignore[arg-type]
    assert per_component.busy_s < all_full.busy_s  # TTFT moves with batching, not always down


@pytest.mark.parametrize(("arch", "page"), [("gpt-oss-120b", 1), ("gpt-oss-120b", 16),
                                            ("qwen3-next-80b-a3b", 1),
                                            ("qwen3-next-80b-a3b", 16)])
def test_hybrid_timed_replays_account_for_every_slot(arch: str, page: int) -> None:
    """Small pools (evictions, retractions): every request finishes or is refused and every
    slot is free or in the tree at the end (replay_hybrid_timed checks it)."""
    run, fig = replay_hybrid_timed(WL, spec(arch, page, 12_000), "lru", None, T)  # type: ignore[arg-type]
    assert fig.finished + fig.refused == WL.num_requests
    assert 0 < run.hit_tokens <= run.full_hit_tokens or arch.startswith("qwen")
    assert run.hit_rate <= 1


def test_the_seam_keeps_a_mamba_requests_tail_and_state_until_it_leaves() -> None:
    """Page 16, grid 64: a checkpoint of 96 tokens gives the tree 64 and a state copy; the
    32 past it stay the request's until its lock goes, with its own state."""
    from radix_evict.cache.hybrid.cache import HybridRadixCache
    from radix_evict.cache.hybrid.node import FULL, MAMBA
    from radix_evict.cache.hybrid.pool import HybridPools
    from radix_evict.sim.timed.hybrid_seam import (
        HybridServerCache,
        HybridServerPool,
        RequestState,
        mamba_track,
    )

    pools = HybridPools(1024, 0, 4, 16)
    seam = HybridServerCache(HybridRadixCache(pools, mamba=True, mamba_grid=64),
                             mamba_track(16, 64, 256))
    pool = HybridServerPool(seam.cache)
    st = RequestState(plen=100)
    key = list(range(160))
    m = seam.match_prefix(key[:99], st)
    seam.inc_lock_ref(m.last_node)
    assert m.prefix_len == 0 and pools.available(MAMBA) == 3  # its own state
    assert pool.alloc(112) is not None
    seam.insert(key[:96], priority=0, prev_prefix_len=0, context=st)  # a checkpoint
    _, node = seam.locate(key[:96])
    seam.inc_lock_ref(node)
    seam.dec_lock_ref(m.last_node)
    assert (st.protected, st.owed, pools.available(MAMBA)) == (64, 32, 2)
    assert pools.available(FULL) == 1024 - 112
    assert pool.alloc(48) is not None  # decode to 160
    seam.insert(key[:160], priority=0, prev_prefix_len=96, context=st)  # its finish
    seam.dec_lock_ref(node)
    assert (st.owed, st.state, pools.available(MAMBA)) == (0, False, 3)
    assert pools.available(FULL) == 1024 - 64  # the tree's 64 tokens, nothing else held
    assert seam.cache.evictable_size(FULL) == 64


def test_the_seam_frees_window_kv_behind_the_window_before_an_insert() -> None:
    """Window 4, page 1: a checkpoint of 20 tokens first frees the request's window KV
    below 15 (SGLang's free_swa_out_of_window_slots); full KV all goes to the tree."""
    from radix_evict.cache.hybrid.cache import HybridRadixCache
    from radix_evict.cache.hybrid.node import FULL, SWA
    from radix_evict.cache.hybrid.pool import HybridPools
    from radix_evict.sim.timed.hybrid_seam import HybridServerCache, HybridServerPool, RequestState

    pools = HybridPools(100, 80, 0, 1)
    seam = HybridServerCache(HybridRadixCache(pools, window=4), None)
    pool = HybridServerPool(seam.cache)
    st = RequestState(plen=21)
    m = seam.match_prefix(list(range(20)), st)
    seam.inc_lock_ref(m.last_node)
    assert pool.available_size() == 80  # the smaller pool's room
    pool.alloc(20)
    seam.insert(list(range(20)), priority=0, prev_prefix_len=0, context=st)
    assert st.evicted == 15
    assert (pools.available(FULL), pools.available(SWA)) == (80, 75)
