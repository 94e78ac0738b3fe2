"""RequestContext: recorded on the nodes a match or insert walks, undone with the rest."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from radix_evict import EvictionPolicy, KVPool, RadixCache, RequestContext, TreeNode
from radix_evict.testing.invariants import check_cache


class Recorder(EvictionPolicy):
    """LRU that keeps the context each callback saw; can be told to raise on a hit."""

    name = "recorder"
    uses_context = True

    def __init__(self) -> None:
        super().__init__()
        self.inserted: list[object] = []
        self.hits: list[object] = []
        self.fail_hits = False

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        self.inserted.append(node.context)

    def on_hit(self, node: TreeNode) -> None:
        if self.fail_hits:
            raise RuntimeError("policy failed")
        self.hits.append(node.context)


def _fill(cache: RadixCache, pool: KVPool, tokens: list[int], ctx: RequestContext | None) -> None:
    row = pool.alloc(len(tokens))
    assert row is not None
    cache.insert(np.asarray(tokens), row, context=ctx)


def test_insert_and_match_record_the_context_on_their_path() -> None:
    pool = KVPool(size=256, page_size=1, device="cpu", layers=0)
    policy = Recorder()
    cache = RadixCache(pool, policy=policy)
    a = RequestContext(session=1, turn=0, kind="text", rid="a")
    b = RequestContext(session=1, turn=1, kind="tool", rid="b", parent="a")
    _fill(cache, pool, list(range(10)), a)
    assert policy.inserted == [a]
    (leaf,) = cache.root.children.values()
    assert leaf.context is a
    _fill(cache, pool, [*range(6), 50, 51], b)  # splits after 6 tokens
    head = leaf.parent
    assert head is not None and head is not cache.root
    assert head.context is b  # the key covered the head
    assert leaf.context is a  # the tail was not this request's
    new = next(c for c in head.children.values() if c is not leaf)
    assert new.context is b and policy.inserted[-1] is b
    c = RequestContext(session=2, rid="c")
    m = cache.match_prefix(np.arange(4), c)
    assert m.prefix_len == 4 and m.last_node.context is c
    assert policy.hits and policy.hits[-1] is c  # recorded before the policy heard of the hit
    m = cache.match_prefix(np.arange(4))  # no context: nothing recorded, nothing erased
    assert m.last_node.context is c
    check_cache(cache)


def test_a_raising_callback_leaves_the_old_contexts() -> None:
    pool = KVPool(size=64, page_size=1, device="cpu", layers=0)
    policy = Recorder()
    cache = RadixCache(pool, policy=policy)
    a = RequestContext(rid="a")
    _fill(cache, pool, list(range(8)), a)
    policy.fail_hits = True
    with pytest.raises(Exception, match="policy failed"):
        cache.match_prefix(np.arange(8), RequestContext(rid="x"))
    (leaf,) = cache.root.children.values()
    assert leaf.context is a
    check_cache(cache)


def test_without_a_context_nodes_carry_none() -> None:
    pool = KVPool(size=64, page_size=4, device="cpu", layers=0)
    cache = RadixCache(pool, page_size=4, policy="lru")
    row = pool.alloc(8)
    assert row is not None
    cache.insert(torch.arange(8), row)
    (leaf,) = cache.root.children.values()
    assert leaf.context is None
