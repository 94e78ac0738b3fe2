"""Textbook versions of the classic policies over a flat cache of unit-size items.

Written from the papers' pseudocode (ARC: Megiddo & Modha 2003, Fig. 4;
S3-FIFO: Yang et al. 2023, Algorithm 1 with libCacheSim's defaults; SIEVE:
Zhang et al. 2024, Algorithm 1), to check the radix adaptations against: a
flat cache is a radix tree whose items are all single-token leaves of the
root, where leaf-only eviction is no restriction at all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from radix_evict import KVPool, RadixCache


class LRU:
    def __init__(self, c: int) -> None:
        self.c = c
        self.items: OrderedDict[int, None] = OrderedDict()

    def access(self, x: int) -> bool:
        if x in self.items:
            self.items.move_to_end(x)
            return True
        if len(self.items) >= self.c:
            self.items.popitem(last=False)
        self.items[x] = None
        return False


class ARC:
    """ARC(c), Fig. 4 of the paper, in items."""

    def __init__(self, c: int) -> None:
        self.c = c
        self.p = 0.0
        self.t1: OrderedDict[int, None] = OrderedDict()
        self.t2: OrderedDict[int, None] = OrderedDict()
        self.b1: OrderedDict[int, None] = OrderedDict()
        self.b2: OrderedDict[int, None] = OrderedDict()

    def _replace(self, x: int) -> None:
        if self.t1 and (len(self.t1) > self.p or (x in self.b2 and len(self.t1) == self.p)):
            y, _ = self.t1.popitem(last=False)
            self.b1[y] = None
        else:
            y, _ = self.t2.popitem(last=False)
            self.b2[y] = None

    def access(self, x: int) -> bool:
        c = self.c
        if x in self.t1:
            del self.t1[x]
            self.t2[x] = None
            return True
        if x in self.t2:
            self.t2.move_to_end(x)
            return True
        if x in self.b1:
            self.p = min(c, self.p + max(len(self.b2) / len(self.b1), 1))
            self._replace(x)
            del self.b1[x]
            self.t2[x] = None
            return False
        if x in self.b2:
            self.p = max(0, self.p - max(len(self.b1) / len(self.b2), 1))
            self._replace(x)
            del self.b2[x]
            self.t2[x] = None
            return False
        l1 = len(self.t1) + len(self.b1)
        total = l1 + len(self.t2) + len(self.b2)
        if l1 == c:
            if len(self.t1) < c:
                self.b1.popitem(last=False)
                self._replace(x)
            else:
                self.t1.popitem(last=False)
        elif total >= c:
            if total == 2 * c:
                self.b2.popitem(last=False)
            self._replace(x)
        self.t1[x] = None
        return False


class S3FIFO:
    """S3-FIFO(c): small FIFO 10%, main FIFO with 2-bit reinsertion, ghosts as many as main."""

    def __init__(self, c: int, small: float = 0.1) -> None:
        self.c = c
        self.s_cap = max(1, int(small * c))
        self.small: OrderedDict[int, None] = OrderedDict()
        self.main: OrderedDict[int, None] = OrderedDict()
        self.ghost: OrderedDict[int, None] = OrderedDict()
        self.freq: dict[int, int] = {}

    def access(self, x: int) -> bool:
        if x in self.freq:
            self.freq[x] = min(self.freq[x] + 1, 3)
            return True
        while len(self.small) + len(self.main) >= self.c:
            self._evict()
        if x in self.ghost:
            del self.ghost[x]
            self.main[x] = None
        else:
            self.small[x] = None
        self.freq[x] = 0
        return False

    def _evict(self) -> None:
        if len(self.small) >= self.s_cap:
            self._evict_small()
        else:
            self._evict_main()

    def _evict_small(self) -> None:
        while self.small:
            t, _ = self.small.popitem(last=False)
            if self.freq[t] >= 1:  # accessed: to main, its bits cleared
                self.freq[t] = 0
                self.main[t] = None
            else:
                del self.freq[t]
                self.ghost[t] = None
                if len(self.ghost) > self.c - self.s_cap:
                    self.ghost.popitem(last=False)
                return

    def _evict_main(self) -> None:
        while self.main:
            t, _ = self.main.popitem(last=False)
            if self.freq[t] > 0:
                self.freq[t] -= 1
                self.main[t] = None
            else:
                del self.freq[t]
                return


class Sieve:
    """SIEVE(c); ``k`` > 1 makes the visited bit a counter capped at ``k``."""

    def __init__(self, c: int, k: int = 1) -> None:
        self.c = c
        self.k = k
        self.queue: list[int] = []  # oldest first
        self.visits: dict[int, int] = {}
        self.hand = 0

    def access(self, x: int) -> bool:
        if x in self.visits:
            self.visits[x] = min(self.visits[x] + 1, self.k)
            return True
        if len(self.queue) >= self.c:
            self._evict()
        self.queue.append(x)
        self.visits[x] = 0
        return False

    def _evict(self) -> None:
        q = self.queue
        if self.hand >= len(q):
            self.hand = 0
        while self.visits[q[self.hand]]:
            self.visits[q[self.hand]] -= 1
            self.hand = self.hand + 1 if self.hand + 1 < len(q) else 0
        del self.visits[q.pop(self.hand)]  # the hand now points at the next newer item


class Radix:
    """A radix-evict cache used as a flat cache: item ``x`` is the one-token prompt ``[x]``."""

    def __init__(self, c: int, policy: Any, config: Any = None) -> None:
        self.pool = KVPool(size=c, page_size=1, device="cpu")
        self.cache = RadixCache(self.pool, policy=policy, policy_config=config)

    def access(self, x: int) -> bool:
        if self.cache.match_prefix([x]).prefix_len:
            return True
        if self.pool.available_size() == 0:
            self.cache.evict(1)
        new = self.pool.alloc(1)
        assert new is not None
        self.cache.insert([x], new)
        return False

    def items(self) -> list[int]:
        return sorted(int(node.key[0]) for node in self.cache.iter_nodes())


def zipf_trace(n: int, universe: int, alpha: float, seed: int,
               scan_every: int = 0, scan_len: int = 0) -> list[int]:
    """``n`` Zipf(alpha) draws over ``universe`` items, with a scan of new items now and then."""
    rng = np.random.default_rng(seed)
    weights = np.arange(1, universe + 1, dtype=float) ** -alpha
    draws = rng.choice(universe, size=n, p=weights / weights.sum())
    out: list[int] = []
    fresh = 10 * universe
    for i, x in enumerate(draws):
        out.append(int(x))
        if scan_every and i % scan_every == 0:
            out.extend(range(fresh, fresh + scan_len))
            fresh += scan_len
    return out


def hit_rate(cache: Any, trace: Sequence[int]) -> float:
    return sum(cache.access(x) for x in trace) / len(trace)


class WTinyLFU:
    """W-TinyLFU(c): 1% window LRU, SLRU main (80% protected), TinyLFU admission duel."""

    def __init__(self, c: int, window: float = 0.01, protected: float = 0.8,
                 width: int = 16384, depth: int = 4) -> None:
        self.w_cap = max(1, round(c * window))
        self.m_cap = c - self.w_cap
        self.p_cap = int(self.m_cap * protected)
        self.window: OrderedDict[int, None] = OrderedDict()
        self.probation: OrderedDict[int, None] = OrderedDict()
        self.protected: OrderedDict[int, None] = OrderedDict()
        self.width, self.depth = width, depth
        self.table = np.zeros((depth, width), dtype=np.uint8)
        self.sample, self.additions = 10 * c, 0
        self.salts = [0x9E3779B97F4A7C15 * (i + 1) for i in range(depth)]

    def _cells(self, x: int) -> list[int]:
        return [hash((x, s)) % self.width for s in self.salts]

    def _add(self, x: int) -> None:
        for row, col in enumerate(self._cells(x)):
            if self.table[row, col] < 15:
                self.table[row, col] += 1
        self.additions += 1
        if self.additions >= self.sample:
            self.table >>= 1
            self.additions //= 2

    def _estimate(self, x: int) -> int:
        return min(int(self.table[row, col]) for row, col in enumerate(self._cells(x)))

    def access(self, x: int) -> bool:
        self._add(x)
        if x in self.window:
            self.window.move_to_end(x)
            return True
        if x in self.probation:
            del self.probation[x]
            self.protected[x] = None
            if len(self.protected) > self.p_cap:
                y, _ = self.protected.popitem(last=False)
                self.probation[y] = None
            return True
        if x in self.protected:
            self.protected.move_to_end(x)
            return True
        self.window[x] = None
        if len(self.window) > self.w_cap:
            cand, _ = self.window.popitem(last=False)
            if len(self.probation) + len(self.protected) < self.m_cap:
                self.probation[cand] = None
                return False
            segment = self.probation if self.probation else self.protected
            victim = next(iter(segment))
            if self._estimate(cand) > self._estimate(victim):
                del segment[victim]
                self.probation[cand] = None
        return False
