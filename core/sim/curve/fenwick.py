"""A growable Fenwick (binary indexed) tree of token weights over access stamps.

Position ``s`` holds the tokens of the node last touched at stamp ``s`` (0
once it moved on): the tokens more recent than a stamp, and the stamp below
which a pool of a given size must evict, are then O(log n) each.
"""

from __future__ import annotations


class Fenwick:
    """Prefix sums over positions 0.. with point updates; grows by doubling."""

    __slots__ = ("_cap", "_step", "_tree", "_w", "total")

    def __init__(self, capacity: int = 1 << 16) -> None:
        cap = 1
        while cap < capacity:
            cap <<= 1
        self._cap = cap
        self._step = cap  # the highest power of two <= cap (cap is one)
        self._tree = [0] * (cap + 1)
        self._w = [0] * cap  # the raw weights: what a rebuild starts from
        self.total = 0

    def _grow(self, pos: int) -> None:
        cap = self._cap
        while cap <= pos:
            cap <<= 1
        w = self._w + [0] * (cap - self._cap)
        tree = [0] * (cap + 1)
        for i, x in enumerate(w, 1):  # O(n) build: each node passes its sum up once
            if x:
                tree[i] += x
            j = i + (i & -i)
            if j <= cap:
                tree[j] += tree[i]
        self._cap, self._step, self._tree, self._w = cap, cap, tree, w

    def add(self, pos: int, delta: int) -> None:
        """Add ``delta`` tokens at position ``pos``."""
        if pos >= self._cap:
            self._grow(pos)
        self._w[pos] += delta
        self.total += delta
        tree, cap = self._tree, self._cap
        i = pos + 1
        while i <= cap:
            tree[i] += delta
            i += i & -i

    def prefix(self, end: int) -> int:
        """Tokens at positions ``[0, end)``."""
        if end > self._cap:
            end = self._cap
        tree = self._tree
        s = 0
        while end > 0:
            s += tree[end]
            end &= end - 1
        return s

    def lower_bound(self, target: int) -> int:
        """The smallest ``end`` with ``prefix(end) >= target`` (0 if ``target <= 0``;
        past the last position if the total is short of it)."""
        if target <= 0:
            return 0
        tree, cap = self._tree, self._cap
        pos = 0
        step = self._step
        while step:
            nxt = pos + step
            if nxt <= cap and tree[nxt] < target:
                pos = nxt
                target -= tree[nxt]
            step >>= 1
        return pos + 1
