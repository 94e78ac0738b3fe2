"""The incremental eviction driver: exact for volatile scores, bounded in memory."""

from __future__ import annotations

from typing import ClassVar

import pytest
from helpers.rigs import Rig

from radix_evict import EvictionPolicy, PolicyError, TreeNode
from radix_evict.testing.invariants import check_cache


class ExternalCost(EvictionPolicy):
    """Scores read a table outside the tree: they change without the node being touched."""

    name = "external-cost"
    volatile_score: ClassVar[bool] = True
    cost: ClassVar[dict[int, float]] = {}

    def score(self, node: TreeNode) -> float:
        return self.cost.get(int(node.key[0]), 0.0)


class StaleExternalCost(ExternalCost):
    volatile_score: ClassVar[bool] = False


def build(policy: EvictionPolicy) -> Rig:
    rig = Rig(policy=policy)
    for first in (1, 2, 3):
        rig.insert([first, first])
    return rig


def test_volatile_scores_are_rescored_on_every_evict() -> None:
    ExternalCost.cost = {1: 5.0, 2: 1.0, 3: 9.0}
    rig = build(ExternalCost())
    ExternalCost.cost = {1: 0.5, 2: 8.0, 3: 9.0}  # changes after the nodes were scored
    rig.cache.evict(1)
    assert rig.leaf_tokens() == [[2, 2], [3, 3]]
    check_cache(rig.cache)


def test_a_policy_that_hides_volatility_gets_stale_order() -> None:
    """Why the flag exists: without it the heap keeps the scores seen at insert."""
    ExternalCost.cost = {1: 5.0, 2: 1.0, 3: 9.0}
    rig = build(StaleExternalCost())
    ExternalCost.cost = {1: 0.5, 2: 8.0, 3: 9.0}
    rig.cache.evict(1)
    assert rig.leaf_tokens() == [[1, 1], [3, 3]]


def test_ties_fall_back_to_least_recently_used() -> None:
    ExternalCost.cost = {}
    rig = build(ExternalCost())  # every score 0.0
    rig.cache.match_prefix([1, 1])
    rig.cache.evict(1)
    assert rig.leaf_tokens() == [[1, 1], [3, 3]]  # [2, 2] is now the least recent


def test_stale_heap_entries_are_compacted() -> None:
    rig = Rig(size=4096)
    for first in range(50):
        rig.insert([first, 0])
    for _ in range(200):
        for first in range(50):
            rig.cache.match_prefix([first, 0])  # every touch pushes a fresh entry
    assert len(rig.cache._driver) <= 3 * rig.cache.num_nodes + 4097
    rig.cache.evict(1)
    assert len(rig.cache._driver) <= 3 * rig.cache.num_nodes + 4097
    assert len(rig.cache.evictable_leaves()) == 49
    check_cache(rig.cache)


class ShapeShifter(EvictionPolicy):
    """Scores of two shapes: a tuple for some leaves, a number for others."""

    name = "shape-shifter"
    width: ClassVar[dict[int, int]] = {}

    def score(self, node: TreeNode) -> float | tuple[int, ...]:
        n = self.width.get(int(node.key[0]), 0)
        return tuple(range(n)) if n else 1.0


def test_tuple_scores_order_like_nested_tuples() -> None:
    """Spliced heap entries (*score, time, seq, node) keep (score, time) order."""
    ExternalCost.cost = {}

    class Pairs(EvictionPolicy):
        name = "pairs"
        table: ClassVar[dict[int, tuple[int, int]]] = {1: (1, 9), 2: (0, 5), 3: (1, 0)}

        def score(self, node: TreeNode) -> tuple[int, int]:
            return self.table[int(node.key[0])]

    rig = build(Pairs())
    gone: list[int] = []
    for _ in range(3):
        left = {leaf[0] for leaf in rig.leaf_tokens()}
        rig.cache.evict(1)
        (evicted,) = left - {leaf[0] for leaf in rig.leaf_tokens()}
        gone.append(evicted)
    assert gone == [2, 3, 1]  # (0, 5) < (1, 0) < (1, 9)


def test_scores_of_two_shapes_are_an_error_naming_the_policy() -> None:
    ShapeShifter.width = {1: 2, 2: 0}
    rig = Rig(policy=ShapeShifter())
    rig.insert([1, 1])
    with pytest.raises(PolicyError, match=r"'shape-shifter'.*tuples of one fixed length"):
        rig.insert([2, 2])
    ShapeShifter.width = {1: 2, 2: 3}
    rig = Rig(policy=ShapeShifter())
    rig.insert([1, 1])
    with pytest.raises(PolicyError, match="after returning tuples of 2 items"):
        rig.insert([2, 2])
