"""Policies that order by time alone: lru and the hidden fifo, mru, filo."""

from __future__ import annotations

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy


class LRUPolicy(EvictionPolicy):
    """Least recently used first."""

    name = "lru"

    def score(self, node: TreeNode) -> float:
        return node.last_access_time


class MRUPolicy(EvictionPolicy):
    """Most recently used first: useful only as a foil in comparisons."""

    name = "mru"

    def score(self, node: TreeNode) -> float:
        return -node.last_access_time


class FIFOPolicy(EvictionPolicy):
    """Oldest created first, whatever its use since."""

    name = "fifo"

    def score(self, node: TreeNode) -> float:
        return node.creation_time


class FILOPolicy(EvictionPolicy):
    """Newest created first."""

    name = "filo"

    def score(self, node: TreeNode) -> float:
        return -node.creation_time
