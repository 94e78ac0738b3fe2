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
  at the others (``alts``);
- ``pend``: requests in flight whose rows hold a node's pages at a size
  where they missed it: copies the model tree counts once (``extra``).

Where the per-size cache would still differ, the size is marked inexact and
the caller replays it on its own (:mod:`radix_evict.sim.curve.run`): a
request that finds no room (a failed admission: the cache then evicts all
it can and the request holds nothing), an eviction reaching pages one
request in flight inserted while another still holds them in its row
(unlocked at that size, pinned in the model), and a merged node straddling
its eviction point. See docs/pool-curve.md.
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

    __slots__ = ("allow", "alts", "children", "end", "glue_down", "glue_up", "key", "ntok",
                 "parent", "pend", "pins", "stamp")

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
        # (stamp, sizes): where it sits at sizes that a touch did not refresh
        self.alts: tuple[tuple[int, int], ...] = ()
        self.pend: list[int] | None = None  # per size: requests in flight with a row copy


@dataclass
class _Flight:
    """A request between its arrival and its finish."""

    matched: int  # tokens of its prompt the model tree held at arrival (pinned)
    rest: int  # the rest of its row: rounded prompt + output tokens past ``matched``
    ends: list[int]  # its path at arrival, root first: where each node ended
    masks: list[int]  # ... and the sizes where it hit that node


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
        # Unpinned nodes absent at some size (allow) or elsewhere in its order (alts),
        # and their stamps ascending (entries go stale when a node moves on).
        self.ghosts: dict[_Node, int] = {}  # node -> the stamp it was noted at
        self.g_stamps: list[list[int]] = [[] for _ in range(K)]  # per size it is irregular at
        self.g_nodes: list[list[_Node]] = [[] for _ in range(K)]
        self.extra = [0] * K  # per size: tokens of row copies the model counts once
        self.loose: dict[_Node, None] = {}  # pinned, yet in some size's tree unlocked
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
        if x.alts:
            moved = 0
            m = 0
            for pos, sizes in x.alts:
                moved |= sizes
                m |= self._stamp_mask(pos) & sizes
            return x.allow & ((self._stamp_mask(x.stamp) & ~moved) | m)
        return x.allow & self._stamp_mask(x.stamp)

    @staticmethod
    def _pos(x: _Node, bit: int) -> int:
        """Where ``x`` sits in the eviction order of the size ``bit``."""
        for pos, sizes in x.alts:
            if sizes & bit:
                return pos
        return x.stamp

    def _register(self, x: _Node) -> None:
        """Note unpinned ``x`` as irregular at the sizes where it is absent or moved."""
        s = x.stamp
        if self.ghosts.get(x) == s:
            return
        self.ghosts[x] = s
        irr = self.full & ~x.allow
        for _, m in x.alts:
            irr |= m
        c = 0
        while irr:
            if irr & 1:
                stamps, nodes = self.g_stamps[c], self.g_nodes[c]
                if stamps and stamps[-1] > s:
                    i = bisect_left(stamps, s)
                    stamps.insert(i, s)
                    nodes.insert(i, x)
                else:
                    stamps.append(s)
                    nodes.append(x)
            irr >>= 1
            c += 1

    # ------------------------------------------------------------------ stamps
    def _restamp(self, x: _Node, allow: int, alts: tuple[tuple[int, int], ...] = ()) -> None:
        """Touch ``x``: the next stamp, where it may be cached from now on, and where it
        keeps an old place (``alts``: only for an unpinned node)."""
        s = len(self.node_at)
        self.node_at.append(x)
        x.alts = alts
        if x.pins:
            if x.pend is not None:
                self._extra(x, -1)
                x.allow = allow
                self._extra(x, 1)
        else:
            fen = self.fen
            if x.stamp >= 0:
                fen.add(x.stamp, -x.ntok)
            fen.add(s, x.ntok)
            self.ghosts.pop(x, None)
        x.stamp = s
        x.allow = allow
        if not x.pins and (allow != self.full or alts):
            self._register(x)

    def _refresh_at(self, x: _Node, sizes: int) -> None:
        """Touch unpinned ``x`` only at ``sizes``: where else it is cached it keeps its place
        (in ``alts``); where it is not cached it stays absent."""
        cached = self._cached(x)
        stay = cached & ~sizes
        if not stay:
            self._restamp(x, cached)
            return
        moved = 0
        alts = []
        for pos, m in x.alts:
            moved |= m
            if m & stay:
                alts.append((pos, m & stay))
        if stay & ~moved:
            alts.append((x.stamp, stay & ~moved))
        self._restamp(x, cached, tuple(alts))

    def _extra(self, x: _Node, sign: int) -> None:
        """Add (or take back) pinned ``x``'s row copies beyond the one the model counts:
        at each size, [in the tree there] + requests holding a copy - 1."""
        pend = x.pend
        assert pend is not None
        w = sign * x.ntok
        allow = x.allow
        ex = self.extra
        for c, n in enumerate(pend):
            k = (allow >> c & 1) + n - 1
            if k:
                ex[c] += w * k

    def _pin(self, x: _Node, miss: int) -> None:
        """Request pins ``x``; at sizes ``miss`` it missed it and holds a copy in its row."""
        if x.pend is not None:
            self._extra(x, -1)
        if not x.pins:
            x.alts = ()
            self.fen.add(x.stamp, -x.ntok)
            self.pinned += x.ntok
            self.ghosts.pop(x, None)
        x.pins += 1
        if miss:
            if x.pend is None:
                x.pend = [0] * self.K
            c = 0
            while miss:
                if miss & 1:
                    x.pend[c] += 1
                miss >>= 1
                c += 1
        if x.pend is not None:
            self._extra(x, 1)

    def _unpin(self, x: _Node, miss: int) -> None:
        """The request that pinned ``x`` (missing it at ``miss``) inserted it."""
        pend = x.pend
        if pend is not None:
            self._extra(x, -1)
            c = 0
            while miss:
                if miss & 1:
                    pend[c] -= 1
                miss >>= 1
                c += 1
        x.pins -= 1
        if not x.pins:
            x.pend = None
            self.loose.pop(x, None)
            self.pinned -= x.ntok
            self.fen.add(x.stamp, x.ntok)
            if x.allow != self.full:
                self._register(x)
            return
        if pend is not None:
            self._extra(x, 1)
            if any(pend) and x.allow:  # in the tree where inserted, other rows still hold it
                self.loose[x] = None

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
        head.alts = x.alts
        if x.pend is not None:  # (the extra copies are per token: both halves carry them)
            self._extra(x, -1)
            head.pend = list(x.pend)
        parent.children[x.key[: self.pb]] = head
        x.key = x.key[m:]
        x.ntok -= m // TOKEN_BYTES
        x.parent = head
        x.glue_up = 0
        head.children[x.key[: self.pb]] = x
        if x.pend is not None:
            self._extra(x, 1)
            self._extra(head, 1)
        if x in self.ghosts:
            self._register(head)  # (shares x's stamp until both are restamped)
        if x in self.loose:
            self.loose[head] = None
        return head

    def _chain(self, y: _Node, bits: int) -> list[tuple[_Node, int]]:
        """``y`` and the nodes glued below it, each with the sizes (of ``bits``) where it is
        one cache node with ``y``; deepest last."""
        chain = [(y, bits)]
        while y.glue_down & bits:
            nxt = None
            for k in y.children.values():
                m = k.glue_up & bits & self._cached(k)
                if m:
                    nxt, bits = k, m
                    break
            if nxt is None:
                break
            chain.append((nxt, bits))
            y = nxt
        return chain

    def _cut(self, x: _Node, sizes: int, refresh: list[tuple[_Node, int]]) -> None:
        """At ``sizes`` a touch ends at ``x`` while the cache there may hold ``x`` and a
        child as one node: it splits that node there, and refreshes the tail it splits
        off. Unglue them and queue the tail's nodes to be touched at those sizes.

        ``glue_down`` is an over-approximation (a child evicted at a size may keep a
        stale glue bit for it): only a child cached at a size is glued there.
        """
        down = 0
        for y in list(x.children.values()):
            bits = y.glue_up & sizes & self._cached(y)
            if bits:
                y.glue_up &= ~bits
                refresh.extend(reversed(self._chain(y, bits)))
            down |= y.glue_up
        x.glue_down = down

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
    def _irregular(self, c: int, b: int) -> list[_Node]:
        """Nodes irregular at size ``c`` stamped at or above ``b`` (only those can count
        there); drops those below its boundary for good (it only rises)."""
        stamps, nodes = self.g_stamps[c], self.g_nodes[c]
        low = bisect_left(stamps, self.b[c])
        if low > 64:
            del stamps[:low], nodes[:low]
        i = bisect_left(stamps, b)
        ghosts = self.ghosts
        return [x for s, x in zip(stamps[i:], nodes[i:], strict=True)
                if x.stamp == s and ghosts.get(x) == s]

    def _excess(self, c: int, b: int, xs: list[_Node]) -> int:
        """Tokens the Fenwick tree counts at or above ``b`` that size ``c`` does not hold
        there (absent, or moved below ``b``); ``xs``: the irregular nodes that may count."""
        bit = 1 << c
        e = 0
        for x in xs:
            if x.stamp >= b and not (x.allow & bit and self._pos(x, bit) >= b):
                e += x.ntok
        return e

    def _occupancy(self, c: int) -> int:
        b = self.b[c]
        return (self.fen.total - self.fen.prefix(b) - self._excess(c, b, self._irregular(c, b))
                + self.pinned + self.extra[c])

    def _lowest_fit(self, c: int, room: int) -> int:
        """The lowest boundary, not below the current one, at which size ``c`` holds at
        most ``room`` unpinned tokens. The excess is constant between its breakpoints."""
        fen = self.fen
        b0 = self.b[c]
        bit = 1 << c
        xs = self._irregular(c, b0)
        cuts = set()
        for x in xs:
            for q in (x.stamp + 1, self._pos(x, bit) + 1):
                if q > b0:
                    cuts.add(q)
        lo = b0
        for hi in [*sorted(cuts), 1 << 62]:
            e = self._excess(c, lo, xs)
            b = max(lo, fen.lower_bound(fen.total - room - e))
            if b < hi:
                return b
            lo = hi
        return lo  # (unreachable: the last segment is open)

    def _evict(self, c: int) -> None:
        """Size ``c`` after an arrival: evict (raise its boundary) until everything fits."""
        C = self.sizes[c]
        fen = self.fen
        extra = self.extra[c]
        if fen.total + self.pinned + extra <= C:  # (the excess is never negative)
            return
        occ = self._occupancy(c)
        if occ <= C:
            return
        self.evict_calls[c] += 1
        room = C - self.pinned - extra
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
        for x in self.loose:  # in this size's tree unlocked, kept by the model as pinned
            if x.allow & bit and x.stamp < b and x.pend is not None and x.pend[c]:
                self._mark(bit, "an eviction reached pages another request's row also held")
        self.b[c] = b
        self.neg_b[c] = -b
        if self.nested and ((c and self.b[c - 1] < b) or (c + 1 < self.K and b < self.b[c + 1])):
            self.nested = False
        self.evicted[c] += occ - self._occupancy(c)

    def _expire(self) -> None:
        """Forget irregular nodes every size has evicted for good (below every boundary)."""
        low = min(self.b)
        ghosts = self.ghosts
        for x in [x for x in ghosts if x.stamp < low and all(p < low for p, _ in x.alts)]:
            del ghosts[x]
            x.allow = self.full  # (evicted everywhere: where it may be cached no longer matters)
            x.alts = ()
        for c in range(self.K):  # drop the entries of nodes that moved on since
            keep = [(s, x) for s, x in zip(self.g_stamps[c], self.g_nodes[c], strict=True)
                    if x.stamp == s and ghosts.get(x) == s]
            self.g_stamps[c] = [s for s, _ in keep]
            self.g_nodes[c] = [x for _, x in keep]

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
            self.flights[req.rid] = _Flight(0, rounded, [], [])
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
            nxt = m
        if tail is not None and tail.glue_down & tail_was:
            bits = tail.glue_down & tail_was
            refresh.extend(reversed(self._chain(tail, bits)[1:]))
        # Touch: split-off tails first (refreshed only where cached), then the path
        # deepest first; the path stays pinned until this request's insert.
        self._refresh(refresh)
        if tail is not None:
            self._restamp(tail, tail.allow & tail_was if not tail.pins else tail.allow)
        full = self.full
        for j in range(len(path) - 1, -1, -1):
            x = path[j]
            self._restamp(x, masks[j] if not x.pins else x.allow)
            self._pin(x, full & ~masks[j])
        matched = off // TOKEN_BYTES
        rest = rounded - matched
        self.flights[req.rid] = _Flight(matched, rest, [x.end for x in path], masks)
        self.pinned += rest
        for c in range(K):
            self._evict(c)
        self.arrivals += 1
        if not self.arrivals & 63:
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
                par.glue_down |= up  # (an over-approximation: see _cut)
            prev = m
        # Touch: tails (where cached), then deepest first; unpin what the arrival pinned.
        self._refresh(refresh)
        if tail is not None:
            self._restamp(tail, tail.allow & tail_was if not tail.pins else tail.allow)
        for j in range(len(path) - 1, -1, -1):
            x = path[j]
            self._restamp(x, full_mask)
        # Unpin what the arrival pinned: the nodes covering its matched prefix (splits since
        # may have cut them finer; a node's sizes are those of the arrival's node it is in).
        j = 0
        for x in path:
            if x.end > f.matched:
                break
            while x.end > f.ends[j]:
                j += 1
            self._unpin(x, full_mask & ~f.masks[j])

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
