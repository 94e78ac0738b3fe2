"""One lru replay for many pool sizes: a shared recency stack, a boundary per size.

The model tree holds every page any request inserted (it never evicts). Its
nodes are stamped in eviction order: an operation touches a path, and the
deeper nodes of that path get the lower stamps (SGLang evicts leaves first,
and a parent is touched whenever a child is, so it is never older). The
tokens at each stamp live in a Fenwick tree. A pool of ``C`` tokens then
holds exactly the unpinned nodes stamped at or above its boundary ``b[C]``,
plus what in-flight requests pin; evicting moves ``b[C]`` up to the lowest
stamp at which everything above still fits, in O(log n). So one pass keeps
every size's cache at once, and a request's hit at each size is the longest
prefix of its path cached at that size.

What the per-size cache does and a shared stack does not is kept per size:

- sizes as bit masks over the sorted sizes. A node's ``allow`` says at
  which sizes it may be cached: an operation that touches a node only where
  it is cached (a match's path, the tail a split refreshes) leaves it absent
  where it was not;
- ``pins``: the requests in flight whose match went through a node. Their
  nodes and rows cannot be evicted (locked hit path, allocated row) and are
  counted apart (``pinned``) until the request's insert restamps them;
- ``glue``: at a size where a request's insert re-created evicted pages, the
  cache made one node of what the model tree holds as several; that size
  evicts them together (its eviction overshoot), and when a touch ends
  inside such a node the cache splits it and refreshes the tail it splits
  off: those nodes are touched at that size only, and keep their old place
  at the others (``alt``, ``alt_mask``).

Where the per-size cache would still differ, the size is marked inexact and
the caller replays it on its own (:mod:`radix_evict.sim.curve.run`): a
request that finds no room (a failed admission: the cache then evicts all
it can and the request holds nothing), two requests in flight holding the
same uncached pages in their rows (two copies at that size, one in the
model), a node that would need a third place in the order, and a merged
node whose top was touched without its bottom. See docs/pool-curve.md.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from radix_evict.cache.tree import TOKEN_BYTES, common_prefix_len
from radix_evict.sim.curve.fenwick import Fenwick
from radix_evict.sim.workloads import Request, Workload


class _Node:
    """A node of the model tree: a run of pages, its stamp, and its per-size state."""

    __slots__ = ("allow", "alt", "alt_mask", "children", "end", "glue_down", "glue_up", "key",
                 "ntok", "parent", "pins", "stamp")

    def __init__(self, parent: _Node | None, key: bytes, end: int, full: int) -> None:
        self.parent = parent
        self.key = key
        self.ntok = len(key) // TOKEN_BYTES
        self.end = end  # tokens from the root through this node
        self.children: dict[bytes, _Node] = {}
        self.stamp = -1
        self.allow = full  # sizes where this node may be cached
        self.pins = 0  # requests in flight that matched through it
        self.glue_up = 0  # sizes where it is one cache node with its parent
        self.glue_down = 0  # sizes where a child is one cache node with it
        self.alt = -1  # at sizes alt_mask the node sits at stamp alt (not refreshed there)
        self.alt_mask = 0


@dataclass
class _Flight:
    """A request between its arrival and its finish."""

    matched: int  # tokens of its prompt the model tree held at arrival (pinned)
    rest: int  # the rest of its row: rounded prompt + output tokens past ``matched``


@dataclass
class StackPass:
    """What one pass found, per size (index into the sorted sizes)."""

    sizes: list[int]
    hits: npt.NDArray[np.int64]  # (requests, sizes): prompt tokens hit
    prompts: npt.NDArray[np.int64]  # (requests,): prompt tokens
    evicted: list[int]
    evict_calls: list[int]
    inexact: list[str | None]  # why the pass cannot stand for the per-size replay, or None


class _Pass:
    """The model tree, the stamp order and every size's boundary (module docstring)."""

    def __init__(self, sizes: Sequence[int], page_size: int) -> None:
        self.sizes = list(sizes)
        K = len(self.sizes)
        self.K = K
        self.full = (1 << K) - 1
        self.P = page_size
        self.pb = page_size * TOKEN_BYTES
        self.root = _Node(None, b"", 0, self.full)
        self.fen = Fenwick()
        self.node_at: list[_Node | None] = []
        self.b = [0] * K  # every size's boundary: stamps below it are evicted
        self.neg_b = [0] * K  # -b, ascending while the sizes are nested (bisect)
        self.nested = True
        self.pinned = 0  # tokens pinned by requests in flight: nodes and rows
        # Unpinned nodes absent at some size (allow) or elsewhere in its order (alt).
        self.ghosts: dict[_Node, None] = {}
        self.flights: dict[str, _Flight] = {}
        self.evicted = [0] * K
        self.evict_calls = [0] * K
        self.inexact: list[str | None] = [None] * K
        self.arrivals = 0

    # ------------------------------------------------------------------ per size
    def _mark(self, mask: int, why: str) -> None:
        """Sizes in ``mask`` can no longer be computed here: say why (first reason kept)."""
        c = 0
        while mask:
            if mask & 1 and self.inexact[c] is None:
                self.inexact[c] = why
            mask >>= 1
            c += 1

    def _stamp_mask(self, s: int) -> int:
        """The sizes whose boundary is at or below stamp ``s``."""
        if self.nested:
            c0 = bisect_left(self.neg_b, -s)
            return self.full ^ ((1 << c0) - 1)
        m = 0
        for c, bc in enumerate(self.b):
            if bc <= s:
                m |= 1 << c
        return m

    def _cached(self, x: _Node) -> int:
        """The sizes at which ``x`` is cached now."""
        if x.pins:
            return x.allow
        am = x.alt_mask
        if am:
            return x.allow & ((self._stamp_mask(x.stamp) & ~am) | (self._stamp_mask(x.alt) & am))
        return x.allow & self._stamp_mask(x.stamp)

    def _pos(self, x: _Node, bit: int) -> int:
        """Where ``x`` sits in the eviction order of the size ``bit``."""
        return x.alt if x.alt_mask & bit else x.stamp

    # ------------------------------------------------------------------ stamps
    def _restamp(self, x: _Node, allow: int) -> None:
        """Touch ``x``: the next stamp, and where it may be cached from now on."""
        s = len(self.node_at)
        self.node_at.append(x)
        if not x.pins:
            fen = self.fen
            if x.stamp >= 0:
                fen.add(x.stamp, -x.ntok)
            fen.add(s, x.ntok)
            if allow != self.full:
                self.ghosts[x] = None
            elif x in self.ghosts:
                del self.ghosts[x]
        x.stamp = s
        x.allow = allow
        x.alt_mask = 0

    def _refresh_at(self, x: _Node, sizes: int) -> None:
        """Touch unpinned ``x`` only at ``sizes``: where else it is cached it keeps its place
        (as ``alt``); where it is not cached it stays absent."""
        cached = self._cached(x)
        stay = cached & ~sizes
        if not stay:
            self._restamp(x, cached)
            return
        old = x.stamp
        if x.alt_mask:
            if x.alt_mask & stay and stay & ~x.alt_mask:  # two old places: one alt only
                self._mark(x.alt_mask & stay, "a node kept three places in the order")
            if x.alt_mask & stay:
                old = x.alt
        self._restamp(x, cached)
        x.alt, x.alt_mask = old, stay
        self.ghosts[x] = None

    def _pin(self, x: _Node) -> None:
        if not x.pins:
            x.alt_mask = 0
            self.fen.add(x.stamp, -x.ntok)
            self.pinned += x.ntok
            self.ghosts.pop(x, None)
        x.pins += 1

    def _unpin(self, x: _Node) -> None:
        x.pins -= 1
        if not x.pins:
            self.pinned -= x.ntok
            self.fen.add(x.stamp, x.ntok)
            if x.allow != self.full:
                self.ghosts[x] = None

    # ------------------------------------------------------------------ tree
    def _split(self, x: _Node, m: int) -> _Node:
        """Split ``x`` after ``m`` bytes; the new head is returned, ``x`` keeps the tail.

        Like the cache's split: the head inherits pins, where it may be cached
        and the glue to its parent. It shares ``x``'s stamp (and weight there)
        until the caller restamps both, which it always does next.
        """
        parent = x.parent
        assert parent is not None
        head = _Node(parent, x.key[:m], x.end - x.ntok + m // TOKEN_BYTES, self.full)
        head.pins = x.pins
        head.allow = x.allow
        head.glue_up = x.glue_up
        head.stamp = x.stamp
        parent.children[x.key[: self.pb]] = head
        x.key = x.key[m:]
        x.ntok -= m // TOKEN_BYTES
        x.parent = head
        x.glue_up = 0
        head.children[x.key[: self.pb]] = x
        return head

    def _chain(self, y: _Node, bits: int) -> list[tuple[_Node, int]]:
        """``y`` and the nodes glued below it, each with the sizes (of ``bits``) where it is
        one cache node with ``y``; deepest last."""
        chain = [(y, bits)]
        while y.glue_down & bits:
            nxt = next((k for k in y.children.values() if k.glue_up & bits), None)
            if nxt is None:
                break
            bits &= nxt.glue_up
            chain.append((nxt, bits))
            y = nxt
        return chain

    def _cut(self, x: _Node, sizes: int, refresh: list[tuple[_Node, int]]) -> None:
        """At ``sizes`` a touch ends at ``x`` while the cache there holds ``x`` and a child
        as one node: it splits that node there, and refreshes the tail it splits off.
        Unglue them and queue the tail's nodes to be touched at those sizes."""
        for y in list(x.children.values()):
            bits = y.glue_up & sizes
            if not bits:
                continue
            y.glue_up &= ~bits
            x.glue_down &= ~bits
            refresh.extend(reversed(self._chain(y, bits)))

    def _refresh(self, nodes: list[tuple[_Node, int]]) -> None:
        """Touch split-off chains at the sizes that split them (deepest first)."""
        for y, sizes in nodes:
            if y.pins:
                self._restamp(y, y.allow)
            else:
                self._refresh_at(y, sizes)

    def _walk(self, kv: bytes) -> tuple[list[_Node], int, _Node | None, int]:
        """The model path of key bytes ``kv``: (nodes, bytes matched, split-off tail, the
        split node's cached sizes before the split)."""
        pb = self.pb
        nb = len(kv)
        node = self.root
        path: list[_Node] = []
        off = 0
        while off < nb:
            child = node.children.get(kv[off : off + pb])
            if child is None:
                break
            ck = child.key
            if kv.startswith(ck, off):
                path.append(child)
                node = child
                off += len(ck)
                continue
            m = common_prefix_len(ck, memoryview(kv), off) * TOKEN_BYTES // pb * pb
            was = self._cached(child)
            head = self._split(child, m)
            path.append(head)
            return path, off + m, child, was
        return path, off, None, 0

    @staticmethod
    def _prefix_masks(masks: list[int]) -> list[int]:
        """Each path node's sizes where it and every ancestor are cached."""
        out = []
        m = -1
        for x in masks:
            m &= x
            out.append(m)
        return out

    # ------------------------------------------------------------------ evict
    def _excess(self, c: int, b: int) -> int:
        """Tokens the Fenwick tree counts at or above ``b`` that size ``c`` does not hold
        there (absent, or in another place): negative when another place is above."""
        bit = 1 << c
        e = 0
        for x in self.ghosts:
            here = x.ntok if x.stamp >= b else 0
            there = x.ntok if x.allow & bit and self._pos(x, bit) >= b else 0
            e += here - there
        return e

    def _occupancy(self, c: int) -> int:
        b = self.b[c]
        return self.fen.total - self.fen.prefix(b) - self._excess(c, b) + self.pinned

    def _lowest_fit(self, c: int, room: int) -> int:
        """The lowest boundary, not below the current one, at which size ``c`` holds at
        most ``room`` unpinned tokens. The excess is constant between its breakpoints."""
        fen = self.fen
        b0 = self.b[c]
        bit = 1 << c
        cuts = set()
        for x in self.ghosts:
            for q in (x.stamp + 1, self._pos(x, bit) + 1):
                if q > b0:
                    cuts.add(q)
        lo = b0
        for hi in [*sorted(cuts), 1 << 62]:
            e = self._excess(c, lo)
            b = max(lo, fen.lower_bound(fen.total - room - e))
            if b < hi:
                return b
            lo = hi
        return lo  # (unreachable: the last segment is open)

    def _evict(self, c: int) -> None:
        """Size ``c`` after an arrival: evict (raise its boundary) until everything fits."""
        C = self.sizes[c]
        fen = self.fen
        if fen.total + self.pinned <= C:  # (the excess is never negative: alt is older)
            return
        occ = self._occupancy(c)
        if occ <= C:
            return
        self.evict_calls[c] += 1
        room = C - self.pinned
        if room < 0:
            self._mark(1 << c, "a request found no room (failed admission)")
            return
        b = min(self._lowest_fit(c, room), len(self.node_at))
        bit = 1 << c
        if b > 0:  # a merged cache node goes whole: past its top
            e = self.node_at[b - 1]
            if e is not None and not e.pins and e.allow & bit and self._pos(e, bit) == b - 1 \
                    and e.glue_up & bit:
                x = e
                while x.glue_up & bit and x.parent is not None:
                    x = x.parent
                top = self._pos(x, bit)
                if x.pins or top < b - 1:
                    self._mark(bit, "a merged cache node straddles its eviction point")
                else:
                    b = top + 1
        self.b[c] = b
        self.neg_b[c] = -b
        if self.nested and ((c and self.b[c - 1] < b) or (c + 1 < self.K and b < self.b[c + 1])):
            self.nested = False
        self.evicted[c] += occ - self._occupancy(c)

    def _expire(self) -> None:
        """Forget irregular nodes every size has evicted for good (below every boundary)."""
        low = min(self.b)
        gone = [x for x in self.ghosts if x.stamp < low and (not x.alt_mask or x.alt < low)]
        for x in gone:
            del self.ghosts[x]
            x.allow = self.full  # (evicted everywhere: where it may be cached no longer matters)
            x.alt_mask = 0

    # ------------------------------------------------------------------ requests
    def arrive(self, req: Request) -> list[int]:
        """Match, pin and evict at every size; returns the prompt tokens hit at each."""
        P = self.P
        prompt = req.prompt
        plen = len(prompt)
        n = plen // P * P
        rounded = -(-(plen + len(req.output)) // P) * P
        K = self.K
        if not n:
            self.flights[req.rid] = _Flight(0, rounded)
            self.pinned += rounded
            for c in range(K):
                self._evict(c)
            return [0] * K
        kv = prompt[:n].tobytes()
        path, off, tail, tail_was = self._walk(kv)
        masks = self._prefix_masks([self._cached(x) for x in path])
        if tail is not None:
            masks[-1] &= tail_was
        hits = [0] * K
        refresh: list[tuple[_Node, int]] = []
        # Where the match ends at each size, and what the cache there would do that the
        # model tree cannot: split one of its merged nodes, hold a second row copy.
        nxt = 0
        for j in range(len(path) - 1, -1, -1):
            x, m = path[j], masks[j]
            ends = m & ~nxt
            if ends:
                if x.glue_down & ends:
                    self._cut(x, x.glue_down & ends, refresh)
                c, e = 0, ends
                while e:
                    if e & 1:
                        hits[c] = x.end
                    e >>= 1
                    c += 1
            if x.pins and x.allow != self.full:
                self._mark(self.full & ~x.allow & ~m,
                           "two requests in flight held the same uncached pages")
            nxt = m
        if tail is not None and tail.glue_down & tail_was:
            bits = tail.glue_down & tail_was
            refresh.extend(reversed(self._chain(tail, bits)[1:]))
        # Touch: split-off tails first (refreshed only where cached), then the path
        # deepest first; the path stays pinned until this request's insert.
        self._refresh(refresh)
        if tail is not None:
            self._restamp(tail, tail.allow & tail_was if not tail.pins else tail.allow)
        for j in range(len(path) - 1, -1, -1):
            x = path[j]
            self._restamp(x, masks[j] if not x.pins else x.allow)
            self._pin(x)
        matched = off // TOKEN_BYTES
        rest = rounded - matched
        self.flights[req.rid] = _Flight(matched, rest)
        self.pinned += rest
        for c in range(K):
            self._evict(c)
        self.arrivals += 1
        if not self.arrivals & 255 and self.ghosts:
            self._expire()
        return hits

    def finish(self, req: Request) -> None:
        """Insert prompt + output (and split at the prompt's last page); unpin."""
        f = self.flights.pop(req.rid)
        self.pinned -= f.rest
        P = self.P
        full = req.tokens()
        L = len(full) // P * P
        Lp = len(req.prompt) // P * P
        if not L:
            return
        kv = full[:L].tobytes()
        path, off, tail, tail_was = self._walk(kv)
        masks = self._prefix_masks([self._cached(x) for x in path])
        if tail is not None:
            masks[-1] &= tail_was
        # Where each size's cached prefix ends, its insert starts a new leaf: it splits
        # a merged node there if one runs on past that point.
        refresh: list[tuple[_Node, int]] = []
        nxt = 0
        for j in range(len(path) - 1, -1, -1):
            x, m = path[j], masks[j]
            ends = m & ~nxt
            if ends and x.glue_down & ends:
                self._cut(x, x.glue_down & ends, refresh)
            nxt = m
        if tail is not None and tail.glue_down & tail_was:
            bits = tail.glue_down & tail_was
            refresh.extend(reversed(self._chain(tail, bits)[1:]))
        if off < len(kv):
            parent = path[-1] if path else self.root
            leaf = _Node(parent, kv[off:], L, self.full)
            parent.children[kv[off : off + self.pb]] = leaf
            path.append(leaf)
            masks.append(0)
        if 0 < Lp < L:  # the prompt-boundary insert splits at Lp (every size has it all now)
            for j, x in enumerate(path):
                start = x.end - x.ntok
                if start < Lp < x.end:
                    path.insert(j, self._split(x, (Lp - start) * TOKEN_BYTES))
                    masks.insert(j, masks[j])
                    break
        # Glue: at a size where a node's parent is not cached, the insert's one new leaf
        # holds both; the leaf is cut at Lp. Cached nodes keep their glue.
        full_mask = self.full
        prev = full_mask
        for j, x in enumerate(path):
            m = masks[j]
            old = x.glue_up
            up = 0 if x.end - x.ntok == Lp else (old & m) | (full_mask & ~prev)
            if up != old:
                x.glue_up = up
                par = x.parent
                assert par is not None
                par.glue_down = (par.glue_down & ~old) | up
            prev = m
        # Touch: tails (where cached), then deepest first; unpin what the arrival pinned.
        self._refresh(refresh)
        if tail is not None:
            self._restamp(tail, tail.allow & tail_was if not tail.pins else tail.allow)
        for j in range(len(path) - 1, -1, -1):
            x = path[j]
            self._restamp(x, full_mask)
        for x in path:
            if x.end <= f.matched:
                self._unpin(x)
            else:
                break

    def result(self, prompts: list[int], hits: list[list[int]]) -> StackPass:
        return StackPass(
            sizes=self.sizes,
            hits=np.asarray(hits, dtype=np.int64).reshape(len(hits), self.K),
            prompts=np.asarray(prompts, dtype=np.int64),
            evicted=self.evicted,
            evict_calls=self.evict_calls,
            inexact=self.inexact,
        )


def stack_pass(workload: Workload, sizes: Sequence[int], page_size: int) -> StackPass:
    """One pass over ``workload`` for pool ``sizes`` (ascending, whole pages, distinct)."""
    p = _Pass(sizes, page_size)
    prompts: list[int] = []
    hits: list[list[int]] = []
    arrive, finish = p.arrive, p.finish
    for _, kind, req in workload.events():
        if kind == "arrive":
            hits.append(arrive(req))
            prompts.append(len(req.prompt))
        else:
            finish(req)
    return p.result(prompts, hits)
