"""``wtinylfu``: W-TinyLFU, a small LRU window in front of a frequency-admitted segmented LRU.

Source: Gil Einziger, Roy Friedman and Ben Manes, "TinyLFU: A Highly
Efficient Cache Admission Policy", ACM Transactions on Storage 13(4), 2017
(the policy behind Caffeine).

W-TinyLFU sends new items into a window LRU (1% of the cache). An item
leaving the window is a *candidate* for the main cache, a segmented LRU
(a probation segment, and a protected one with 80% of the main cache that a
hit in probation promotes to; protected overflow goes back to probation).
TinyLFU admits the candidate only if its estimated access frequency is
higher than that of the main cache's victim (the probation segment's least
recent item), and evicts the loser. Frequencies come from a count-min sketch
of 4-bit counters over every access, hits and misses alike, which halves all
its counters after every ``W`` additions (``W = 10 x`` the cache's items) so
that old popularity fades.

Adapted to leaf-only radix eviction:

* **The segments** hold nodes; only evictable leaves can be evicted, and an
  inner node past its turn waits until its subtree is gone.
* **An access** is a lookup reaching a node (``on_hit``, every node of the
  matched path) or a new leaf (``on_insert``, the miss); each adds one to
  the sketch. ``insert`` walking existing nodes is not an access.
* **The sketch counts prefix fingerprints**: each node's key is its parent's
  prefix fingerprint mixed with its first token, so a prefix evicted and
  requested again is counted as the same item however the new leaf is cut.
  It is ``sketch_depth`` rows of ``sketch_width`` 4-bit counters (one
  ``bytearray``); each row indexes with its own 64-bit mix of the key. There
  is no doorkeeper (the paper's optional Bloom filter), and no ghost list:
  the sketch is W-TinyLFU's memory of evicted items.
* **The segments become deadlines** (see ``_common``): a node's score is the
  eviction clock at which it would leave the cache. The window keeps a node
  for ``T_W`` after its last access, probation for ``T_P``, protected for
  ``T_R`` and then hands it back to probation, with Little's law sizing them
  to ``window_fraction`` and the segments' shares. The admission duel is
  fought at the candidate's own events (its insertion, and each hit while in
  the window) against the main cache's victim at that moment, its evictable
  node with the earliest deadline (admitted outright while the main cache
  has none); once admitted, a candidate stays admitted. An admitted node's
  deadline is the end of its window stay plus a probation stay; a refused
  one's is the end of its window stay. A hit pushes out only its own node's
  deadline, so the eviction heap stays exact. What is approximate: a main
  node leaves when the clock reaches its deadline, where W-TinyLFU keeps it
  until a candidate beats it, so the main cache turns over at the rate of
  admissions on average rather than duel by duel, and the segments hold
  their shares on average.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

from ._common import GOLDEN, MASK64, BranchKeys, Lifetimes, Occupancy, mix64

if TYPE_CHECKING:
    from radix_evict import TreeNode

WINDOW, PROBATION, PROTECTED = 0, 1, 2
COUNTER_MAX = 15  # 4-bit counters


class WTinyLFUConfig(PolicyConfig):
    """Keys of the ``wtinylfu`` policy (strict: unknown keys and coercion are errors)."""

    window_fraction: float = Field(
        default=0.01,
        ge=0,
        lt=1,
        description="Share of the cache the admission window (an LRU) holds (the paper's 1%).",
    )
    protected_fraction: float = Field(
        default=0.8,
        ge=0,
        lt=1,
        description=(
            "Share of the main cache (outside the window) its protected segment holds; "
            "the rest is probation (the paper's 80%)."
        ),
    )
    sketch_width: int = Field(
        default=16384,
        ge=16,
        le=1 << 24,
        description="4-bit counters per row of the count-min sketch.",
    )
    sketch_depth: int = Field(
        default=4,
        ge=1,
        le=16,
        description="Rows of the count-min sketch (hash functions per key).",
    )
    reset_period: int = Field(
        default=0,
        ge=0,
        description=(
            "Sketch additions after which every counter halves (TinyLFU's sample size W); "
            "0 means 10 x the most nodes the cache has held (W = 10 C)."
        ),
    )


class CountMinSketch:
    """``depth`` rows of ``width`` 4-bit counters (a byte each), with TinyLFU's halving reset."""

    __slots__ = ("_additions", "_table", "_view", "depth", "width")

    def __init__(self, width: int, depth: int) -> None:
        self.width = width
        self.depth = depth
        self._table = bytearray(width * depth)
        self._view = np.frombuffer(self._table, dtype=np.uint8)  # for the halving
        self._additions = 0

    def cells(self, key: int) -> tuple[int, ...]:
        """The counter of each row for ``key`` (offsets into the table)."""
        w = self.width
        return tuple(row * w + mix64((key + row * GOLDEN) & MASK64) % w
                     for row in range(self.depth))

    def add(self, cells: tuple[int, ...]) -> None:
        table = self._table
        for i in cells:
            if table[i] < COUNTER_MAX:
                table[i] += 1
        self._additions += 1

    def estimate(self, cells: tuple[int, ...]) -> int:
        table = self._table
        return min(table[i] for i in cells)

    @property
    def additions(self) -> int:
        """Additions since the last halving (halved with the counters)."""
        return self._additions

    def halve(self) -> None:
        """TinyLFU's reset: every counter, and the addition count, divided by two."""
        self._view >>= 1
        self._additions //= 2


class _State:
    __slots__ = ("admit", "end", "life", "probation", "segment")

    def __init__(self, segment: int, end: float, life: float, probation: float,
                 admit: bool) -> None:
        self.segment = segment
        self.end = end  # the eviction clock at which the current stay ends
        self.life = life  # the lifetime of that stay
        self.probation = probation  # T_P when the node last had an event
        self.admit = admit  # for the window: whether it wins the admission duel

    def copy(self) -> _State:
        return _State(self.segment, self.end, self.life, self.probation, self.admit)

    @property
    def score(self) -> float:
        if self.segment == WINDOW:
            return self.end + self.probation if self.admit else self.end
        if self.segment == PROTECTED:
            return self.end + self.probation  # back to probation when it leaves protected
        return self.end


class WTinyLFUPolicy(EvictionPolicy[WTinyLFUConfig]):
    """Lowest deadline goes first: when W-TinyLFU would drop the node, on the eviction clock."""

    name = "wtinylfu"

    def __init__(self, config: WTinyLFUConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        main = 1.0 - cfg.window_fraction
        self._targets = (cfg.window_fraction, main * (1.0 - cfg.protected_fraction),
                         main * cfg.protected_fraction)
        self._period = cfg.reset_period
        self._sketch = CountMinSketch(cfg.sketch_width, cfg.sketch_depth)
        self._clock = 0.0  # L: the score of the last victim
        # Main-cache nodes by deadline, lazily cleaned: the lowest evictable one is the
        # victim a candidate duels with.
        self._main_heap: list[tuple[float, int, TreeNode]] = []
        self._seq = 0
        self._state: dict[TreeNode, _State] = {}
        self._cells: dict[TreeNode, tuple[int, ...]] = {}
        self._lifetimes = Lifetimes(3)
        self._keys = BranchKeys()
        self._occupancy = Occupancy()

    # ------------------------------------------------------------------ views (tests, reports)
    @property
    def clock(self) -> float:
        return self._clock

    def victim(self) -> TreeNode | None:
        """The main cache's next victim: its evictable node with the earliest deadline."""
        heap = self._main_heap
        state = self._state
        while heap:
            score, _, node = heap[0]
            st = state.get(node)
            if (st is None or st.score != score or not (st.segment != WINDOW or st.admit)
                    or node.children or node.lock_ref):
                heapq.heappop(heap)  # stale, or not evictable now (pushed again when it is)
                continue
            return node
        return None

    @property
    def admission_threshold(self) -> int:
        """A candidate is admitted if its frequency is above this: the victim's (0: none)."""
        victim = self.victim()
        return 0 if victim is None else self._sketch.estimate(self._cells_of(victim))

    def _admits(self, frequency: int) -> bool:
        """TinyLFU's duel: more frequent than the main cache's victim (admitted if none)."""
        return frequency > self.admission_threshold

    def _push_main(self, node: TreeNode, st: _State) -> None:
        heap = self._main_heap
        self._seq += 1
        heapq.heappush(heap, (st.score, self._seq, node))
        if len(heap) > 2 * len(self._state) + 1024:  # drop stale entries now and then
            state = self._state
            heap[:] = [e for e in heap if (x := state.get(e[2])) is not None
                       and x.score == e[0] and (x.segment != WINDOW or x.admit)]
            heapq.heapify(heap)

    @property
    def sketch(self) -> CountMinSketch:
        return self._sketch

    def frequency(self, node: TreeNode) -> int:
        """The sketch's estimate for the item ``node`` is."""
        return self._sketch.estimate(self._cells_of(node))

    def segment_of(self, node: TreeNode) -> str:
        """``"window"``, ``"probation"`` or ``"protected"``, as of the eviction clock."""
        st = self._state[node]
        clock = self._clock
        if st.segment == WINDOW:
            if st.end > clock or not st.admit:
                return "window"
            return "probation"
        if st.segment == PROTECTED and st.end <= clock:
            return "probation"
        return "probation" if st.segment == PROBATION else "protected"

    def admitted(self, node: TreeNode) -> bool:
        """Whether the node is in, or will be admitted into, the main cache."""
        st = self._state[node]
        return st.segment != WINDOW or st.admit

    def _life(self, segment: int) -> float:
        return self._lifetimes.lifetime(segment, self._targets[segment])

    def _deadline(self, segment: int) -> float:
        return self._lifetimes.deadline(segment, self._clock, self._targets[segment])

    def _cells_of(self, node: TreeNode) -> tuple[int, ...]:
        cells = self._cells.get(node)
        if cells is None:
            cells = self._cells[node] = self._sketch.cells(self._keys.of(node))
        return cells

    def _access(self, node: TreeNode) -> int:
        """Count an access to ``node`` in the sketch; its frequency estimate after it."""
        sketch = self._sketch
        cells = self._cells_of(node)
        sketch.add(cells)
        period = self._period or 10 * self._occupancy.peak_nodes
        if sketch.additions >= period:
            sketch.halve()
        return sketch.estimate(cells)

    # ------------------------------------------------------------------ score
    def score(self, node: TreeNode) -> float:
        st = self._state.get(node)
        return st.score if st is not None else self._clock

    # ------------------------------------------------------------------ callbacks
    # Each changes only the score of the node it is about.
    def on_insert(self, node: TreeNode) -> None:
        occ = self._occupancy
        occ.inserted(node)
        n = node.num_tokens
        admit = self._admits(self._access(node))
        life = self._life(WINDOW)
        st = _State(WINDOW, self._deadline(WINDOW), life, self._life(PROBATION), admit)
        self._state[node] = st
        flows = self._lifetimes
        flows.add(WINDOW, n, occ.peak_tokens)
        if admit:
            flows.add(PROBATION, n, occ.peak_tokens)
            self._push_main(node, st)

    def on_hit(self, node: TreeNode) -> None:
        st = self._state.get(node)
        if st is None:
            return
        freq = self._access(node)
        n = node.num_tokens
        clock = self._clock
        flows = self._lifetimes
        window = self._occupancy.peak_tokens
        segment = st.segment
        if segment == WINDOW and (st.end > clock or not st.admit):
            # in the window (or refused but still cached): to its most recent end
            life = self._life(WINDOW)
            end = max(self._deadline(WINDOW), st.end)
            extension = end - max(st.end, clock)
            flows.add(WINDOW, n * (extension / life if life > 0 else 1.0), window)
            admit = st.admit or self._admits(freq)
            if admit and not st.admit:
                flows.add(PROBATION, n, window)
            st.end, st.life, st.admit = end, life, admit
            st.probation = self._life(PROBATION)
            if admit:
                self._push_main(node, st)
            return
        if segment == PROTECTED and st.end > clock:  # to protected's most recent end
            life = self._life(PROTECTED)
            end = max(self._deadline(PROTECTED), st.end)
            extension = end - st.end
            flows.add(PROTECTED, n * (extension / life if life > 0 else 1.0), window)
            st.end, st.life = end, life
            st.probation = self._life(PROBATION)
            self._push_main(node, st)
            return
        # In probation (admitted from the window, or back from protected): promote it.
        probation_end = st.end if segment == PROBATION else st.end + st.probation
        if probation_end > clock and st.probation > 0:
            flows.remove(PROBATION, n * min(1.0, (probation_end - clock) / st.probation))
        life = self._life(PROTECTED)
        flows.add(PROTECTED, n, window)
        flows.add(PROBATION, n, window)  # where it goes when protected overflows
        st.segment, st.end, st.life = PROTECTED, self._deadline(PROTECTED), life
        st.probation = self._life(PROBATION)
        self._push_main(node, st)

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        st = self._state.get(tail)
        if st is not None:
            self._state[head] = head_st = st.copy()
            if st.segment != WINDOW or st.admit:
                self._push_main(head, head_st)
        cells = self._cells.pop(tail, None)
        if cells is not None:
            self._cells[head] = cells
        self._keys.split(head, tail)
        self._occupancy.split()

    def on_evict(self, node: TreeNode) -> None:
        st = self._state.pop(node, None)
        if st is not None:
            score = st.score
            if score > self._clock:
                self._clock = score
        parent = node.parent
        if parent is not None and len(parent.children) == 1:  # the parent becomes a leaf
            pst = self._state.get(parent)
            if pst is not None and (pst.segment != WINDOW or pst.admit):
                self._push_main(parent, pst)
        self._cells.pop(node, None)
        self._keys.forget(node)
        self._occupancy.evicted(node)
