"""The eviction driver: candidates kept incrementally, lowest score evicted first.

SGLang scores every evictable leaf on each ``evict`` call, so the call costs
O(leaves). Here the candidates live in a heap that the cache updates as the
tree changes: whenever a node that could be an evictable leaf is touched,
split, unlocked, or loses its last child, it is pushed with a fresh score.
Each push carries a sequence number that the node remembers; an entry whose
number is not the node's latest, or whose node is no longer an evictable
leaf, is stale and skipped when popped (lazy invalidation). The heap stays
exact for any policy whose score reads only the node's own fields. A policy
that declares ``volatile_score`` is re-scored in full on every ``evict`` call.
"""

from __future__ import annotations

import heapq
from typing import Any

from radix_evict.policy import EvictionPolicy
from radix_evict.tree import TreeNode

HeapEntry = tuple[Any, int, int, TreeNode]  # (score, last_access_time, seq, node)


def is_evictable_leaf(node: TreeNode) -> bool:
    """Holds KV, unlocked, no children, still in the tree, not the root."""
    return node.lock_ref == 0 and not node.children and node.parent is not None


class EvictionDriver:
    """Orders evictable leaves by ``(score, last_access_time)``."""

    def __init__(self, policy: EvictionPolicy) -> None:
        self.policy = policy
        self._score = policy.score
        self._rescore_every_evict = bool(policy.volatile_score)
        self.heap: list[HeapEntry] = []
        self._seq = 0
        self._compact_at = 4096

    def offer(self, node: TreeNode) -> None:
        """(Re-)score ``node`` if it is an evictable leaf; supersedes its older entries."""
        if node.lock_ref == 0 and not node.children and node.parent is not None:  # inlined: hot
            self._seq += 1
            node._heap_seq = self._seq
            heapq.heappush(self.heap, (self._score(node), node.last_access_time, self._seq, node))
            if len(self.heap) > self._compact_at:
                self._rebuild(rescore=False)

    def begin_evict(self) -> None:
        """Called once per ``evict``: re-score volatile policies, drop stale entries."""
        if self._rescore_every_evict:
            self._rebuild(rescore=True)

    def clear(self) -> None:
        self.heap = []

    def candidates(self) -> list[TreeNode]:
        """The current evictable leaves (each exactly once)."""
        return [e[3] for e in self._live_entries()]

    def __len__(self) -> int:
        return len(self.heap)

    def _live_entries(self) -> list[HeapEntry]:
        """Each evictable leaf's latest entry; stale ones (superseded or no longer a leaf) go."""
        return [e for e in self.heap if e[2] == e[3]._heap_seq and is_evictable_leaf(e[3])]

    def _rebuild(self, rescore: bool) -> None:
        entries = self._live_entries()
        if rescore:
            entries = [(self._score(n), n.last_access_time, seq, n) for _, _, seq, n in entries]
        heapq.heapify(entries)
        self.heap = entries
        # Stale entries may again outnumber live ones 2:1 before the next sweep (amortised O(1)).
        self._compact_at = 3 * len(entries) + 4096
