"""One recency list per auxiliary component, threaded through the tree's nodes.

SGLang keeps a doubly linked list per auxiliary component (``UnifiedLRUList``,
``unified_cache/unified_tree_core.py:213-390``): the head is the most recently
used end, eviction scans from the tail and skips nodes whose component is
locked. The operations here are the ones the unified tree uses, with the same
placement rules, so the eviction order is the same.
"""

from __future__ import annotations

from collections.abc import Callable

from radix_evict.cache.hybrid.node import HybridNode


class ComponentLRU:
    """Nodes holding one auxiliary component, most recent first."""

    def __init__(self, component: int) -> None:
        self.component = component
        self._prev: dict[HybridNode | None, HybridNode | None] = {}
        self._next: dict[HybridNode | None, HybridNode | None] = {None: None}
        self._prev[None] = None
        # None is the sentinel: _next[None] is the head, _prev[None] the tail.

    def __contains__(self, node: object) -> bool:
        return node is not None and node in self._next

    def __len__(self) -> int:
        return len(self._next) - 1

    def _link_after(self, prev: HybridNode | None, node: HybridNode) -> None:
        nxt = self._next[prev]
        self._prev[node] = prev
        self._next[node] = nxt
        self._next[prev] = node
        self._prev[nxt] = node

    def _unlink(self, node: HybridNode) -> None:
        prev, nxt = self._prev.pop(node), self._next.pop(node)
        self._next[prev] = nxt
        self._prev[nxt] = prev

    def insert_mru(self, node: HybridNode) -> None:
        assert node not in self, f"{node} already in the LRU"
        self._link_after(None, node)

    def insert_after(self, prev: HybridNode, node: HybridNode) -> None:
        """Place ``node`` just behind ``prev`` (a split's new parent beside its child)."""
        assert prev in self and node not in self
        self._link_after(prev, node)

    def remove(self, node: HybridNode) -> None:
        self._unlink(node)

    def reset_mru(self, node: HybridNode) -> None:
        self._unlink(node)
        self._link_after(None, node)

    def reset_window_mru(
        self, node: HybridNode, root: HybridNode, span: int, include: Callable[[HybridNode], bool]
    ) -> None:
        """Move ``node`` and its ancestors within ``span`` tokens to the front, in path order.

        ``node`` ends first, its parent right behind it, and so on; ``span`` is
        counted over every node passed, tombstones included.
        """
        prev: HybridNode | None = None
        covered = 0
        cur: HybridNode | None = node
        while cur is not None and cur is not root and covered < span:
            if include(cur):
                self._unlink(cur)
                self._link_after(prev, cur)
                prev = cur
            covered += len(cur.key)
            cur = cur.parent

    def prev_unlocked(self, node: HybridNode | None) -> HybridNode | None:
        """The next node towards the head from ``node`` (None: the tail) that is unlocked."""
        c = self.component
        x = self._prev[node]
        while x is not None and x.lock[c] > 0:
            x = self._prev[x]
        return x

    def lru_unlocked(self) -> HybridNode | None:
        return self.prev_unlocked(None)

    def order(self) -> list[HybridNode]:
        """Most recent first (for checks and tests)."""
        out = []
        x = self._next[None]
        while x is not None:
            out.append(x)
            x = self._next[x]
        return out
