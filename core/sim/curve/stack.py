"""One lru replay for many pool sizes: a shared recency stack, a boundary per size.

The model tree holds every page any request inserted (it never evicts). Its
nodes are stamped in eviction order: an operation touches a path, and the
deeper nodes of that path get the lower stamps (SGLang evicts leaves first,
and a parent is touched whenever a child is, so it is never older). A pool
of ``C`` tokens then holds exactly the unpinned nodes stamped at or above
its boundary ``b[C]``, plus what in-flight requests pin. Each size keeps its
occupancy up to date as nodes are touched, pinned and unpinned (``held``:
a touch changes it only at the sizes where the node's cached state flips,
usually none), so an arrival costs a comparison per size; a size over its
pool walks its boundary up the stamps, dropping what sits there, until the
rest fits. A boundary only rises, so each size passes each stamp once in the
whole pass. So one pass keeps every size's cache at once, and a request's
hit at each size is the longest prefix of its path cached at that size.

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

import numpy as np

from radix_evict.cache.tree import TOKEN_BYTES, common_prefix_len
from radix_evict.sim.curve.model import Flight, Node, StackPass
from radix_evict.sim.workloads import Request, Workload


class _Pass:
    """The model tree, the stamp order and every size's boundary (module docstring)."""

    def __init__(self, sizes: Sequence[int], page_size: int) -> None:
        self.sizes = list(sizes)
        K = len(self.sizes)
        self.K = K
        self.full = (1 << K) - 1
        self.P = page_size
        self.pb = page_size * TOKEN_BYTES
        self.root = Node(None, b"", 0, self.full)
        self.node_at: list[Node] = []  # the node each stamp was given to
        self.held = [0] * K  # per size: unpinned tokens cached there (kept up to date)
        self.b = [0] * K  # every size's boundary: stamps below it are evicted
        self.neg_b = [0] * K  # -b, ascending while the sizes are nested (bisect)
        self.nested = True
        # _stamp_mask's table: the boundaries negated, ascending, and the sizes whose
        # boundary is at or below each; while nested, neg_b itself (no sorting needed)
        self._order: tuple[list[int], list[int]] | None = (
            self.neg_b, [self.full ^ ((1 << i) - 1) for i in range(K + 1)])
        self.pinned = 0  # tokens pinned by requests in flight: nodes and rows
        self.extra = [0] * K  # per size: tokens of row copies the model counts once
        self.loose: dict[Node, None] = {}  # pinned, yet in some size's tree unlocked
        self.flights: dict[str, Flight] = {}
        self.evicted = [0] * K
        self.evict_calls = [0] * K
        self.inexact: list[str | None] = [None] * K

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
        """The sizes whose boundary is at or below stamp ``s``: one bisect."""
        keys, above = self._order or self._sort_bounds()
        return above[bisect_left(keys, -s)]

    def _sort_bounds(self) -> tuple[list[int], list[int]]:
        """``_stamp_mask``'s table once the sizes are no longer nested (a size that failed
        an admission keeps its boundary while larger ones move past it): rebuilt after
        the boundaries move, at most once per arrival."""
        pairs = sorted((-bc, c) for c, bc in enumerate(self.b))
        above = [0] * (self.K + 1)
        for i in range(self.K - 1, -1, -1):
            above[i] = above[i + 1] | 1 << pairs[i][1]
        self._order = ([k for k, _ in pairs], above)
        return self._order

    def _cached(self, x: Node) -> int:
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
    def _pos(x: Node, bit: int) -> int:
        """Where ``x`` sits in the eviction order of the size ``bit``."""
        for pos, sizes in x.alts:
            if sizes & bit:
                return pos
        return x.stamp

    @staticmethod
    def _shift(counts: list[int], ntok: int, before: int, after: int) -> None:
        """``ntok`` tokens counted at the sizes ``before`` are now counted at ``after``:
        update per-size ``counts`` (``held``, ``extra``) only at the sizes that differ,
        usually none (a touch of a node cached everywhere leaves it cached everywhere),
        so keeping every size up to date costs no loop over the sizes."""
        flip = before ^ after
        c = 0
        while flip:
            if flip & 1:
                counts[c] += ntok if after >> c & 1 else -ntok
            flip >>= 1
            c += 1

    # ------------------------------------------------------------------ stamps
    def _restamp(self, x: Node, allow: int, alts: tuple[tuple[int, int], ...] = ()) -> None:
        """Touch ``x``: the next stamp, where it may be cached from now on, and where it
        keeps an old place (``alts``: only for an unpinned node)."""
        s = len(self.node_at)
        self.node_at.append(x)
        if x.pins:
            if x.pend is not None:  # its copy in the tree: now where ``allow`` says
                self._shift(self.extra, x.ntok, x.allow, allow)
            x.alts = alts
            x.stamp = s
            x.allow = allow
            return
        before = self._cached(x)
        x.alts = alts
        x.stamp = s
        x.allow = allow
        # (the new stamp is at or above every boundary: cached wherever allowed)
        self._shift(self.held, x.ntok, before, self._cached(x) if alts else allow)

    def _refresh_at(self, x: Node, sizes: int) -> None:
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

    def _extra(self, x: Node, sign: int) -> None:
        """Add (or take back) pinned ``x``'s row copies beyond the one the model counts:
        at each size, [in the tree there] + requests holding a copy - 1. Only when
        ``pend`` comes and goes: changes in between go through ``_shift``."""
        pend = x.pend
        assert pend is not None
        w = sign * x.ntok
        allow = x.allow
        ex = self.extra
        for c, n in enumerate(pend):
            k = (allow >> c & 1) + n - 1
            if k:
                ex[c] += w * k

    def _pin(self, x: Node, miss: int) -> None:
        """Request pins ``x``; at sizes ``miss`` it missed it and holds a copy in its row."""
        if not x.pins:
            self._shift(self.held, x.ntok, self._cached(x), 0)
            x.alts = ()
            self.pinned += x.ntok
        x.pins += 1
        if miss:
            pend = x.pend
            if pend is None:
                pend = x.pend = [0] * self.K
                self._extra(x, 1)
            self._shift(self.extra, x.ntok, 0, miss)
            c = 0
            while miss:
                if miss & 1:
                    pend[c] += 1
                miss >>= 1
                c += 1

    def _unpin(self, x: Node, miss: int) -> None:
        """The request that pinned ``x`` (missing it at ``miss``) inserted it."""
        pend = x.pend
        if pend is not None and miss:
            self._shift(self.extra, x.ntok, miss, 0)
            c = 0
            while miss:
                if miss & 1:
                    pend[c] -= 1
                miss >>= 1
                c += 1
        x.pins -= 1
        if not x.pins:
            if pend is not None:
                self._extra(x, -1)
                x.pend = None
            self.loose.pop(x, None)
            self.pinned -= x.ntok
            self._shift(self.held, x.ntok, 0, self._cached(x))
            return
        if pend is not None and any(pend) and x.allow:
            self.loose[x] = None  # in the tree where inserted, other rows still hold it

    # ------------------------------------------------------------------ tree
    def _split(self, x: Node, m: int) -> Node:
        """Split ``x`` after ``m`` bytes; the new head is returned, ``x`` keeps the tail.

        Like the cache's split: the head inherits pins, where it may be cached
        and the glue to its parent. It shares ``x``'s stamp (so ``held`` is
        unchanged: both halves are cached where ``x`` was) until the caller
        restamps both, which it always does next, before any eviction.
        """
        parent = x.parent
        assert parent is not None
        head = Node(parent, x.key[:m], x.end - x.ntok + m // TOKEN_BYTES, self.full)
        head.pins = x.pins
        head.allow = x.allow
        head.glue_up = x.glue_up
        head.stamp = x.stamp
        head.alts = x.alts
        if x.pend is not None:  # (the extra copies are per token: both halves carry them,
            head.pend = list(x.pend)  # and ``extra`` is unchanged)
        parent.children[x.key[: self.pb]] = head
        x.key = x.key[m:]
        x.ntok -= m // TOKEN_BYTES
        x.parent = head
        x.glue_up = 0
        head.children[x.key[: self.pb]] = x
        if x in self.loose:
            self.loose[head] = None
        return head

    def _chain(self, y: Node, bits: int) -> list[tuple[Node, int]]:
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

    def _cut(self, x: Node, sizes: int, refresh: list[tuple[Node, int]]) -> None:
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

    def _refresh(self, nodes: list[tuple[Node, int]]) -> None:
        """Touch split-off chains at the sizes that split them (deepest first)."""
        for y, sizes in nodes:
            if y.pins:
                self._restamp(y, y.allow)
            else:
                self._refresh_at(y, sizes)

    def _walk(self, kv: bytes) -> tuple[list[Node], int, Node | None, int]:
        """The model path of key bytes ``kv``: (nodes, bytes matched, split-off tail, the
        split node's cached sizes before the split)."""
        pb = self.pb
        nb = len(kv)
        node = self.root
        path: list[Node] = []
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
    def _drop(self, c: int, b: int, stop: int, room: int) -> int:
        """Raise size ``c``'s boundary from ``b``, dropping what sits at each stamp there,
        until at most ``room`` unpinned tokens stay (and at least to ``stop``); returns
        the new boundary. A stamp's node sits there at size ``c`` unless it is pinned,
        absent there (``allow``), or has moved on (a later stamp or another place)."""
        bit = 1 << c
        held = self.held[c]
        node_at = self.node_at
        end = len(node_at)
        while b < end and (held > room or b < stop):
            x = node_at[b]
            if not x.pins and x.allow & bit and (
                    x.stamp == b if not x.alts else self._pos(x, bit) == b):
                held -= x.ntok
            b += 1
        self.held[c] = held
        return b

    def _glued_top(self, c: int, b: int) -> int:
        """A merged cache node goes whole: if the last node size ``c`` dropped (at ``b - 1``)
        is glued to its parent there, the boundary must pass the merged node's top.
        Returns that boundary (``b`` if there is no merge), or -1 where the top is
        pinned or below ``b - 1`` (the merged node straddles the eviction point)."""
        bit = 1 << c
        e = self.node_at[b - 1]
        if e.pins or not e.allow & bit or self._pos(e, bit) != b - 1 or not e.glue_up & bit:
            return b
        x = e
        while x.glue_up & bit and x.parent is not None:
            x = x.parent
        top = self._pos(x, bit)
        if x.pins or top < b - 1:
            return -1
        return top + 1

    def _evict(self, c: int) -> None:
        """Size ``c`` after an arrival, over its pool: evict (raise its boundary) until
        everything fits."""
        base = self.pinned + self.extra[c]
        was = self.held[c]
        self.evict_calls[c] += 1
        room = self.sizes[c] - base
        if room < 0:
            self._mark(1 << c, "a request found no room (failed admission)")
            return
        b = self._drop(c, self.b[c], 0, room)
        if b > 0:
            top = self._glued_top(c, b)
            if top < 0:
                self._mark(1 << c, "a merged cache node straddles its eviction point")
            elif top > b:
                b = self._drop(c, b, top, room)
        bit = 1 << c
        for x in self.loose:  # in this size's tree unlocked, kept by the model as pinned
            if x.allow & bit and x.stamp < b and x.pend is not None and x.pend[c]:
                self._mark(bit, "an eviction reached pages another request's row also held")
        self.b[c] = b
        self.neg_b[c] = -b
        if self.nested and ((c and self.b[c - 1] < b) or (c + 1 < self.K and b < self.b[c + 1])):
            self.nested = False
        if not self.nested:
            self._order = None
        self.evicted[c] += was - self.held[c]

    def _evict_all(self) -> None:
        """Every size over its pool evicts; the others cost one comparison each."""
        pinned = self.pinned
        for c, (h, ex, C) in enumerate(zip(self.held, self.extra, self.sizes, strict=True)):
            if h + ex + pinned > C:
                self._evict(c)

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
            self.flights[req.rid] = Flight(0, rounded, [], [])
            self.pinned += rounded
            self._evict_all()
            return [0] * K
        kv = prompt[:n].tobytes()
        path, off, tail, tail_was = self._walk(kv)
        masks = self._prefix_masks([self._cached(x) for x in path])
        if tail is not None:
            masks[-1] &= tail_was
        hits = [0] * K
        refresh: list[tuple[Node, int]] = []
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
        self.flights[req.rid] = Flight(matched, rest, [x.end for x in path], masks)
        self.pinned += rest
        self._evict_all()
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
        refresh: list[tuple[Node, int]] = []
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
            leaf = Node(parent, kv[off:], L, self.full)
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
