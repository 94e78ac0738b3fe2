"""RadixCache.locate: the cached prefix's length and node, read only (no stamp, split, callback)."""

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


def test_locate_finds_what_match_finds_and_changes_nothing() -> None:
    cache, pool, policy = _cache()
    row = pool.alloc(12)
    assert row is not None
    cache.insert(torch.arange(12), row)
    times = [n.last_access_time for n in cache.iter_nodes()]
    stats = dict(cache.stats.as_dict())
    length, node = cache.locate(np.arange(12))
    assert length == 12
    assert [n.last_access_time for n in cache.iter_nodes()] == times
    assert dict(cache.stats.as_dict()) == stats and policy.hits == 0
    m = cache.match_prefix(np.arange(12))
    assert m.last_node is node and torch.equal(cache.node_slots(node), row)
    assert policy.hits == 1
    check_cache(cache)


def test_a_prefix_ending_inside_a_node_stops_at_its_start_without_a_split() -> None:
    cache, pool, _ = _cache()
    row = pool.alloc(12)
    assert row is not None
    cache.insert(torch.arange(12), row)
    nodes = cache.num_nodes
    assert cache.locate(np.arange(8)) == (0, cache.root)
    assert cache.num_nodes == nodes
    assert cache.locate(np.asarray([0, 1, 99, 98]))[0] == 0
    assert cache.locate(np.arange(13)) == (12, cache.locate(np.arange(12))[1])
