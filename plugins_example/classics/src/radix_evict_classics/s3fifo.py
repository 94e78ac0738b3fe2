"""``s3fifo``: S3-FIFO, a small probationary FIFO, a main FIFO with reinsertion, and ghosts.

Source: Juncheng Yang, Yazhuo Zhang, Ziyue Qiu, Yao Yue and K. V. Rashmi,
"FIFO queues are all you need for cache eviction", SOSP 2023 (defaults as
in the authors' libCacheSim: small queue 10%, ghosts as many as the main
queue holds, move to main after one hit).

S3-FIFO inserts a new item into a small FIFO ``S`` (10% of the cache), or
into the main FIFO ``M`` if its key is in the ghost FIFO ``G``. A hit only
bumps the item's 2-bit counter. When ``S`` is over its share, its oldest item
moves to ``M`` if it was hit (its counter cleared) and is evicted into ``G``
otherwise; ``M`` evicts its oldest item unless its counter is above zero, in
which case it goes back to the head of ``M`` with the counter decremented.
One-hit wonders leave after a short stay in ``S``; anything reused earns its
place in ``M``.

Adapted to leaf-only radix eviction:

* **The queues** hold nodes; only evictable leaves can be evicted, and an
  inner node whose turn comes is passed over until its subtree is gone.
* **An access** is a lookup reaching the node (``on_hit``, every node of the
  matched path); ``insert`` walking existing nodes is not one, and a new leaf
  (``on_insert``) is the insertion.
* **A ghost** is the key of a node evicted from ``S``: its parent's prefix
  fingerprint and its first token, so a request that brings the evicted
  tokens back, however the new leaf is cut, hits it. ``G`` is bounded in
  tokens, ``ghost_fraction`` of the cache (the largest the cache has held).
* **The queues become deadlines** (see ``_common``): a node's score is the
  eviction clock at which S3-FIFO would drop it. ``S`` keeps an entry for
  ``T_S``, ``M`` for ``T_M`` per pass, both from Little's law so that ``S``
  holds ``small_fraction`` of the cache. A hit that earns the move to ``M``,
  or another pass through it, pushes the node's own deadline out at once
  (the move happens when the clock reaches the end of its stay in ``S``),
  so no other node's score changes and the eviction heap stays exact. What
  is approximate: ``S`` holds its share on average, not at every eviction,
  and the lifetimes a node gets are those measured at its last event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

from ._common import BranchKeys, Ghosts, Lifetimes, Occupancy

if TYPE_CHECKING:
    from radix_evict import TreeNode

SMALL, MAIN = 0, 1


class S3FIFOConfig(PolicyConfig):
    """Keys of the ``s3fifo`` policy (strict: unknown keys and coercion are errors)."""

    small_fraction: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description="Share of the cache the small probationary FIFO holds (the paper's 10%).",
    )
    ghost_fraction: float = Field(
        default=0.9,
        ge=0,
        le=16,
        description=(
            "Tokens of evicted small-queue nodes remembered as ghosts, as a fraction of the "
            "cache (0.9: as many as the main FIFO holds; 0 turns ghosts off)."
        ),
    )
    move_to_main: int = Field(
        default=1,
        ge=1,
        le=64,
        description=(
            "Hits a node needs while in the small FIFO to move to the main FIFO instead of "
            "being evicted (libCacheSim's move-to-main threshold, 1)."
        ),
    )
    max_freq: int = Field(
        default=3,
        ge=1,
        le=64,
        description=(
            "Cap of the per-node hit counter (2 bits: 3; never below move_to_main); in the "
            "main FIFO each counted hit is one more pass before eviction."
        ),
    )


class _State:
    """Where a node is: its queue, the clock at which its current stay ends, its counter."""

    __slots__ = ("end", "freq", "main_life", "queue", "score")

    def __init__(self, queue: int, end: float, main_life: float) -> None:
        self.queue = queue
        self.end = end  # the eviction clock at which the current stay ends
        self.freq = 0
        self.main_life = main_life  # T_M when the node last had an event
        self.score = end

    def copy(self) -> _State:
        other = _State(self.queue, self.end, self.main_life)
        other.freq = self.freq
        other.score = self.score
        return other


class S3FIFOPolicy(EvictionPolicy[S3FIFOConfig]):
    """Lowest deadline goes first: when S3-FIFO would drop the node, on the eviction clock."""

    name = "s3fifo"

    def __init__(self, config: S3FIFOConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self._targets = (cfg.small_fraction, 1.0 - cfg.small_fraction)
        self._ghost_fraction = cfg.ghost_fraction
        self._threshold = cfg.move_to_main
        self._max_freq = max(cfg.max_freq, cfg.move_to_main)  # it must count that far
        self._clock = 0.0  # L: the score of the last victim
        self._state: dict[TreeNode, _State] = {}
        self._lifetimes = Lifetimes(2)
        self._ghosts = Ghosts()
        self._keys = BranchKeys()
        self._occupancy = Occupancy()

    # ------------------------------------------------------------------ views (tests, reports)
    @property
    def clock(self) -> float:
        return self._clock

    def queue_of(self, node: TreeNode) -> str:
        """``"small"`` or ``"main"``: where the node is now (as of the eviction clock)."""
        st = self._state[node]
        if st.queue == SMALL and st.end <= self._clock and st.freq >= self._threshold:
            return "main"
        return "small" if st.queue == SMALL else "main"

    def will_move_to_main(self, node: TreeNode) -> bool:
        """Whether the node leaves the small FIFO for the main one (or is already there)."""
        st = self._state[node]
        return st.queue == MAIN or st.freq >= self._threshold

    def is_ghost(self, node: TreeNode) -> bool:
        """Whether the item ``node`` is (its branch key) is in the ghost FIFO."""
        return self._keys.of(node) in self._ghosts

    @property
    def ghost_count(self) -> int:
        return len(self._ghosts)

    def queue_tokens(self) -> dict[str, int]:
        """Tokens in each queue now (a walk over every node: for tests and reports)."""
        out = {"small": 0, "main": 0}
        for node in self._state:
            out[self.queue_of(node)] += node.num_tokens
        return out

    def lifetime(self, queue: str) -> float:
        q = SMALL if queue == "small" else MAIN
        return self._lifetimes.lifetime(q, self._targets[q])

    # ------------------------------------------------------------------ score
    def score(self, node: TreeNode) -> float:
        st = self._state.get(node)
        return st.score if st is not None else self._clock

    def _rescore(self, st: _State) -> None:
        if st.queue == SMALL:
            st.score = st.end + st.main_life if st.freq >= self._threshold else st.end
        else:
            st.score = st.end + st.main_life * st.freq

    def _catch_up(self, st: _State) -> None:
        """Play the moves the clock has already made: small -> main, main passes."""
        clock = self._clock
        while st.end <= clock:
            if st.queue == SMALL:
                if st.freq < self._threshold:
                    return  # due for eviction (not a leaf when its turn came)
                st.queue = MAIN
                st.freq = 0
            elif st.freq > 0:
                st.freq -= 1
            else:
                return
            st.end += st.main_life

    # ------------------------------------------------------------------ callbacks
    # Each changes only the score of the node it is about.
    def on_insert(self, node: TreeNode) -> None:
        occ = self._occupancy
        occ.inserted(node)
        n = node.num_tokens
        window = occ.peak_tokens
        life = self._lifetimes
        main_life = life.lifetime(MAIN, self._targets[MAIN])
        if self._ghosts and self._ghosts.pop(self._keys.of(node)) is not None:
            st = _State(MAIN, life.deadline(MAIN, self._clock, self._targets[MAIN]), main_life)
            life.add(MAIN, n, window)
        else:
            st = _State(SMALL, life.deadline(SMALL, self._clock, self._targets[SMALL]),
                        main_life)
            life.add(SMALL, n, window)
        self._rescore(st)
        self._state[node] = st

    def on_hit(self, node: TreeNode) -> None:
        st = self._state.get(node)
        if st is None:
            return
        self._catch_up(st)
        before = st.freq
        if before >= self._max_freq:
            return  # the counter is saturated: nothing changes
        life = self._lifetimes
        st.main_life = life.lifetime(MAIN, self._targets[MAIN])
        st.freq = before + 1
        # Due, but it was not a leaf: it is at its queue's tail now, so it gets another pass
        # through main (or moves there) at once.
        if st.end <= self._clock and (st.queue == MAIN or st.freq >= self._threshold):
            if st.queue == MAIN:
                st.freq -= 1
            else:
                st.queue, st.freq = MAIN, 0
            st.end = life.deadline(MAIN, self._clock, self._targets[MAIN])
        if st.queue == MAIN or before < self._threshold <= st.freq:
            # one more stay in the main FIFO: a pass, or the move from the small one
            life.add(MAIN, node.num_tokens, self._occupancy.peak_tokens)
        self._rescore(st)

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        st = self._state.get(tail)
        if st is not None:
            self._state[head] = st.copy()
        self._keys.split(head, tail)
        self._occupancy.split()

    def on_evict(self, node: TreeNode) -> None:
        st = self._state.pop(node, None)
        if st is not None:
            if st.score > self._clock:
                self._clock = st.score
            if st.queue == SMALL and st.freq < self._threshold and self._ghost_fraction > 0:
                capacity = self._ghost_fraction * self._occupancy.peak_tokens
                self._ghosts.add(self._keys.of(node), node.num_tokens, capacity)
        self._keys.forget(node)
        self._occupancy.evicted(node)
