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

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy

# (score, last_access_time, seq, node), a tuple score spliced in: (*score, time, seq, node)
HeapEntry = tuple[Any, ...]


def is_evictable_leaf(node: TreeNode) -> bool:
    """Holds KV, unlocked, no children, still in the tree, not the root."""
    return node.lock_ref == 0 and not node.children and node.parent is not None


class EvictionDriver:
    """Orders evictable leaves by ``(score, last_access_time)``, lowest first."""

    def __init__(self, policy: EvictionPolicy) -> None:
        self.policy = policy
        self._score = policy.score
        self._rescore_every_evict = bool(policy.volatile_score)
        self.heap: list[HeapEntry] = []
        self._seq = 0
        self._compact_at = 4096
        # Tuple scores are spliced into the entry, (*score, time, seq, node): comparing
        # one flat tuple costs half as much as a nested one, and every heap step
        # compares. That orders entries as (score, time, seq) would only if all of
        # a policy's scores have one shape, which _entry checks: 0 means numbers,
        # n >= 1 tuples of n items, None not yet seen.
        self._width: int | None = None

    def offer(self, node: TreeNode) -> None:
        """(Re-)score ``node`` if it is an evictable leaf; supersedes its older entries."""
        if node.lock_ref == 0 and not node.children and node.parent is not None:  # inlined: hot
            self._seq += 1
            node._heap_seq = self._seq
            heapq.heappush(self.heap, self._entry(node, self._seq))
            if len(self.heap) > self._compact_at:
                self._rebuild(rescore=False)

    def _entry(self, node: TreeNode, seq: int) -> HeapEntry:
        score = self._score(node)
        if type(score) is tuple:
            if len(score) != self._width:
                self._set_width(score, len(score))
            return (*score, node.last_access_time, seq, node)
        if self._width != 0:
            self._set_width(score, 0)
        return (score, node.last_access_time, seq, node)

    def _set_width(self, score: Any, width: int) -> None:
        if self._width is None:
            self._width = width
            return
        before = "a number" if self._width == 0 else f"tuples of {self._width} items"
        raise TypeError(
            f"policy {self.policy.name!r}: score() returned {score!r} after returning "
            f"{before}; scores must be numbers, or tuples of one fixed length"
        )

    def begin_evict(self) -> None:
        """Called once per ``evict``: re-score volatile policies, drop stale entries."""
        if self._rescore_every_evict:
            self._rebuild(rescore=True)

    def clear(self) -> None:
        self.heap = []

    def candidates(self) -> list[TreeNode]:
        """The current evictable leaves (each exactly once)."""
        return [e[-1] for e in self._live_entries()]

    def stale_scores(self, leaves: list[TreeNode]) -> list[tuple[TreeNode, Any, Any]]:
        """(leaf, key in the heap, key now) for each of ``leaves`` the heap has wrong.

        ``leaves`` are the evictable leaves a from-scratch walk of the tree found;
        one with no live entry gets None as its heap key. A key is
        ``(*score, last_access_time)``. For the conformance kit: a policy whose
        scores changed behind the driver's back shows up here.
        """
        held = {id(e[-1]): e for e in self._live_entries()}
        out = []
        for node in leaves:
            entry = held.get(id(node))
            now = self._entry(node, -1)[:-2]
            if entry is None or entry[:-2] != now:
                out.append((node, None if entry is None else entry[:-2], now))
        return out

    def __len__(self) -> int:
        return len(self.heap)

    def _live_entries(self) -> list[HeapEntry]:
        """Each evictable leaf's latest entry; stale ones (superseded or no longer a leaf) go."""
        return [e for e in self.heap if e[-2] == e[-1]._heap_seq and is_evictable_leaf(e[-1])]

    def _rebuild(self, rescore: bool) -> None:
        entries = self._live_entries()
        if rescore:
            entries = [self._entry(e[-1], e[-2]) for e in entries]
        heapq.heapify(entries)
        self.heap = entries
        # Stale entries may again outnumber live ones 2:1 before the next sweep (amortised O(1)).
        self._compact_at = 3 * len(entries) + 4096
