"""RadixCache.lookup: the cached prefix, read only (no stamp, no split, no callback, no count)."""

from __future__ import annotations

import numpy as np
import torch

from radix_evict import EvictionPolicy, KVPool, RadixCache, TreeNode
from radix_evict.testing.invariants import check_cache


class CountsHits(EvictionPolicy):
    name = "counts-hits"

    def __init__(self) -> None:
        super().__init__()
        self.hits = 0

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_hit(self, node: TreeNode) -> None:
        self.hits += 1


def _cache(page: int = 2) -> tuple[RadixCache, KVPool, CountsHits]:
    pool = KVPool(size=128, page_size=page, device="cpu", layers=0)
    policy = CountsHits()
    return RadixCache(pool, page_size=page, policy=policy), pool, policy


def test_lookup_finds_what_match_finds_and_changes_nothing() -> None:
    cache, pool, policy = _cache()
    row = pool.alloc(12)
    assert row is not None
    cache.insert(torch.arange(12), row)
    times = [n.last_access_time for n in cache.iter_nodes()]
    stats = dict(cache.stats.as_dict())
    got = cache.lookup(np.arange(12))
    assert got.prefix_len == 12 and torch.equal(got.indices, row)
    assert [n.last_access_time for n in cache.iter_nodes()] == times
    assert dict(cache.stats.as_dict()) == stats and policy.hits == 0
    m = cache.match_prefix(np.arange(12))
    assert m.last_node is got.last_node and torch.equal(m.indices, got.indices)
    assert policy.hits == 1
    check_cache(cache)


def test_a_prefix_ending_inside_a_node_stops_at_its_start_without_a_split() -> None:
    cache, pool, _ = _cache()
    row = pool.alloc(12)
    assert row is not None
    cache.insert(torch.arange(12), row)
    nodes = cache.num_nodes
    got = cache.lookup(np.arange(8))
    assert got.prefix_len == 0 and got.last_node is cache.root
    assert cache.num_nodes == nodes
    other = cache.lookup(np.asarray([0, 1, 99, 98]))
    assert other.prefix_len == 0
