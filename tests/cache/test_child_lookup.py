"""A walk down the tree finds the same child however it looks: by scanning a node's few
children and comparing first pages in place, or through the children's dict (and an
eviction unlinks its victim alike, found among its siblings or by its sliced key).

With large pages ``match_prefix`` and ``insert`` compare first pages in place
among a node's few children (a page's bytes need no copy and no hash), and
ask the dict among more. The choice is a speed's alone: caches forced to one
way or the other replay the same random requests (shared prefixes, splits
inside pages' runs, evictions, the prompt checkpoint insert) into the same
state, call by call.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.rigs import cache_state

from radix_evict import KVPool, RadixCache
from radix_evict.testing.invariants import check_cache

ALWAYS_SCAN = 10**9  # every node's children compared in place
ALWAYS_DICT = -1  # never: every lookup through the dict


def replay(page: int, scan: int | None, seed: int) -> list[object]:
    """Random requests through a cache whose lookups scan at most ``scan`` children."""
    rng = np.random.default_rng(seed)
    pool = KVPool(48 * page, page_size=page, device="cpu")
    cache = RadixCache(pool, policy="lru")
    if scan is not None:
        cache._scan_children = scan
        cache._driver._scan_children = scan  # how an eviction finds its victim's key
    bases = [rng.integers(0, 3, size=6 * page) for _ in range(3)]  # shared prefixes
    seen: list[object] = []
    for step in range(60):
        base = bases[int(rng.integers(len(bases)))]
        cut = int(rng.integers(0, len(base) + 1))
        tail = rng.integers(0, 3, size=int(rng.integers(page, 4 * page + 1)))
        tokens = np.concatenate([base[:cut], tail])  # at least one page
        m = cache.match_prefix(tokens)
        cache.inc_lock_ref(m.last_node)
        need = -(-(len(tokens) - m.prefix_len) // page) * page
        short = need - pool.available_size()
        if short > 0:
            seen.append(("evicted", cache.evict(short)))
        new = pool.alloc(need)
        assert new is not None
        row = torch.cat([m.indices, new])
        n = len(tokens) // page * page
        seen.append(("match", m.prefix_len, cache.insert(tokens[:n], row[:n],
                                                         prev_prefix_len=m.prefix_len)))
        half = n // 2 // page * page
        if 0 < half < n:  # the prompt checkpoint: a split insert of a prefix
            seen.append(("checkpoint", cache.insert(tokens[:half], row[:half],
                                                    prev_prefix_len=half, inserted_len=half)))
        if len(row) > n:
            pool.free(row[n:])
        cache.dec_lock_ref(m.last_node)
        check_cache(cache)
        if step % 10 == 9:
            seen.append(cache_state(cache))
    return seen


@pytest.mark.parametrize("page", [1, 16, 64, 512])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scanning_children_and_asking_the_dict_decide_alike(page: int, seed: int) -> None:
    usual = replay(page, None, seed)
    assert replay(page, ALWAYS_SCAN, seed) == usual
    assert replay(page, ALWAYS_DICT, seed) == usual


def test_large_pages_scan_a_few_children_small_ones_ask_the_dict() -> None:
    def few(page: int) -> int:
        return int(RadixCache(KVPool(4 * page, page_size=page, device="cpu"))._scan_children)

    assert few(1) == few(16) == 0  # (a node without children is skipped either way)
    assert few(64) >= 1 and few(512) >= 8
