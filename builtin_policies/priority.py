"""Priority: the prefixes of low-priority requests go first."""

from __future__ import annotations

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy


class PriorityPolicy(EvictionPolicy):
    """Lowest priority first, least recent among equals.

    A node's priority is the highest priority of any request that inserted
    through it (the tree propagates the max), so shared prefixes of
    high-priority traffic stay.
    """

    name = "priority"
    orders_by_priority = True

    def score(self, node: TreeNode) -> tuple[int, float]:
        return (node.priority, node.last_access_time)
