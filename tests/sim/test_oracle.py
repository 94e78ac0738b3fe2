"""The offline bound: Belady's evictions checked by brute force, and its place among policies."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from radix_evict import KVPool, RadixCache, TreeNode, registry
from radix_evict.sim.bound import compute_bounds, replay_oracle
from radix_evict.sim.ceiling import infinite_pool_ceiling
from radix_evict.sim.oracle import FutureIndex, OraclePolicy, future_of
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import Session, SessionWorkload, Turn, WorkloadParams


def _path(node: TreeNode) -> list[int]:
    parts: list[list[int]] = []
    x: TreeNode | None = node
    while x is not None and x.parent is not None:
        parts.append(x.key.tolist())
        x = x.parent
    return [t for part in reversed(parts) for t in part]


def _lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _brute_next_use(node: TreeNode, prompts: list[list[int]], now: int, page: int) -> int:
    """First arrival after ``now`` whose aligned prompt shares the leaf's first page; or never."""
    path = _path(node)
    need = len(path) - node.num_tokens + page
    for j in range(now + 1, len(prompts)):
        aligned = prompts[j][: len(prompts[j]) // page * page]
        if _lcp(aligned, path) >= need:
            return j
    return len(prompts) + 1


def _random_prompts(rng: random.Random, n: int) -> list[list[int]]:
    """Prompts that share prefixes: a few stems, extended and branched at random."""
    stems = [[rng.randrange(4) for _ in range(rng.randrange(2, 7))] for _ in range(4)]
    out = []
    for _ in range(n):
        base = list(rng.choice(stems + out[-4:])) if out else list(rng.choice(stems))
        cut = rng.randrange(len(base) + 1)
        out.append(base[:cut] + [rng.randrange(4) for _ in range(rng.randrange(1, 6))])
    return out


@pytest.mark.parametrize("page", [1, 2])
@pytest.mark.parametrize("seed", range(12))
def test_oracle_evicts_the_farthest_next_use_as_brute_force_says(page: int, seed: int) -> None:
    rng = random.Random(seed)
    prompts = _random_prompts(rng, 40)
    future = FutureIndex(page)
    for p in prompts:
        future.add(np.asarray(p, dtype=np.int64))
    oracle = OraclePolicy(future)
    pool = KVPool(size=24 * page, page_size=page, device="cpu")
    cache = RadixCache(pool, policy=oracle)
    checked = 0
    for i, prompt in enumerate(prompts):
        oracle.now = i
        m = cache.match_prefix(prompt)
        cache.inc_lock_ref(m.last_node)
        n = len(prompt) // page * page
        need = n - m.prefix_len
        while pool.available_size() < need and cache.evictable_leaves():
            leaves = cache.evictable_leaves()
            keyed = {
                x: (-_brute_next_use(x, prompts, i, page), x.last_access_time) for x in leaves
            }
            best = min(keyed.values())
            cache.evict(1)
            gone = [x for x in leaves if x.parent is None]
            assert len(gone) == 1
            assert keyed[gone[0]] == best, (keyed[gone[0]], best)
            checked += 1
        new = pool.alloc(need) if pool.available_size() >= need else None
        if new is not None and n:
            row = torch.cat([m.indices, new])
            cache.insert(prompt[:n], row, prev_prefix_len=m.prefix_len)
        cache.dec_lock_ref(m.last_node)
    assert checked > 5, "the workload must make the oracle choose"


def _tiny_workload(seed: int) -> SessionWorkload:
    """Short conversations over a shared system prompt: the replay must evict."""
    rng = np.random.default_rng(seed)
    system = rng.integers(100, 200, 16)
    sessions = []
    for s in range(12):
        turns = [
            Turn(rng.integers(100, 10_000, int(rng.integers(4, 30))),
                 rng.integers(100, 10_000, int(rng.integers(2, 10))), float(rng.uniform(0, 2)))
            for _ in range(int(rng.integers(1, 5)))
        ]
        sessions.append(Session(float(s) * 0.3, system if s % 3 else system[:8], turns))
    return SessionWorkload("tiny", sessions, WorkloadParams(), seed=seed, default_pool_tokens=160)


@pytest.mark.parametrize("seed", range(4))
def test_oracle_beats_the_builtin_policies_and_stays_under_the_ceiling(seed: int) -> None:
    wl = _tiny_workload(seed)
    oracle = replay_oracle(wl)
    ceiling = infinite_pool_ceiling(wl)
    assert oracle.policy == oracle.label == "oracle" and oracle.evicted_tokens > 0
    for name in BUILTIN:
        if name != "tlru":  # needs a config; the built-in workloads below cover it
            assert replay(wl, name).hit_rate <= oracle.hit_rate + 1e-12, name
    assert oracle.hit_rate <= ceiling.hit_rate + 1e-12
    assert ceiling.prompt_tokens == oracle.prompt_tokens


def test_ceiling_is_the_replay_with_a_pool_that_never_fills() -> None:
    wl = _tiny_workload(7)
    big = replay(wl, "lru", pool_tokens=100_000)
    assert big.evicted_tokens == 0
    c = infinite_pool_ceiling(wl)
    assert (c.hit_tokens, c.prompt_tokens) == (big.hit_tokens, big.prompt_tokens)


def test_future_index_lists_the_arrivals_through_each_prefix() -> None:
    future = FutureIndex(1)
    for p in ([1, 2, 3], [1, 2, 4], [5], [1, 2, 3, 9]):
        future.add(np.asarray(p, dtype=np.int64))
    at = future.advance((future.root, 0), np.asarray([1, 2], dtype=np.int64).tobytes())
    assert at is not None and at[0].uses == [0, 1, 3]
    at = future.advance((future.root, 0), np.asarray([1, 2, 3], dtype=np.int64).tobytes())
    assert at is not None and at[0].uses == [0, 3]
    assert future.advance((future.root, 0), np.asarray([1, 3], dtype=np.int64).tobytes()) is None


def test_gap_closed_measures_from_lru_to_the_oracle() -> None:
    wl = _tiny_workload(1)
    results = [replay(wl, p) for p in ("lru", "lfu")]
    (b,) = compute_bounds([wl], results).values()
    assert b.reference_hit_rate == results[0].hit_rate
    assert b.gap_closed(results[0].hit_rate) == 0.0
    assert b.gap_closed(b.oracle.hit_rate) == pytest.approx(1.0)
    lfu = b.gap_closed(results[1].hit_rate)
    gap = b.oracle.hit_rate - results[0].hit_rate
    assert lfu == pytest.approx((results[1].hit_rate - results[0].hit_rate) / gap)
    # Without lru among the results, the bound replays lru itself.
    (b2,) = compute_bounds([wl], results[1:]).values()
    assert b2.reference_hit_rate == results[0].hit_rate


def test_oracle_is_no_servable_policy() -> None:
    assert "oracle" not in registry.choices(extended=True)
    assert registry.validate("oracle", None)
    assert future_of(_tiny_workload(0), 1).arrivals == _tiny_workload(0).num_requests


BUILTIN = ("lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo")
SMALLER = {
    "chat": {"convs": 300},
    "hot-set-with-scans": {"hot_requests": 800},
    "popularity-shift": {"requests": 800},
    "priority-tiers": {"requests": 800},
    "agentic": {"sessions": 30},
}


def test_on_the_builtin_workloads_the_oracle_bounds_every_builtin_policy() -> None:
    from radix_evict.sim.replay import policy_matrix
    from radix_evict.sim.workloads import get_workload, workload_names

    assert set(SMALLER) == set(workload_names())
    wls = [get_workload(n, **SMALLER[n]) for n in workload_names()]
    m = policy_matrix(wls, BUILTIN, workers=None)
    bounds = compute_bounds(wls, m.results, workers=None)
    for w in wls:
        b = bounds[w.name]
        assert b.oracle.evicted_tokens > 0
        for r in (r for r in m.results if r.workload == w.name):
            assert r.hit_rate <= b.oracle.hit_rate + 1e-12, (w.name, r.label)
        assert b.oracle.hit_rate <= b.ceiling.hit_rate + 1e-12, w.name
