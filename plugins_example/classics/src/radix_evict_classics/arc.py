"""``arc``: ARC, recency and frequency lists whose split adapts to ghost hits.

Source: Nimrod Megiddo and Dharmendra S. Modha, "ARC: A Self-Tuning, Low
Overhead Replacement Cache", USENIX FAST 2003.

ARC keeps two LRU lists: ``T1`` for items seen once recently, ``T2`` for
items seen at least twice. Evicted items leave ghosts: ``B1`` for those
evicted from ``T1``, ``B2`` from ``T2``. A target ``p`` says how much of the
cache ``T1`` should hold. A miss that hits a ``B1`` ghost means ``T1`` was
too small, so ``p`` grows by ``max(|B2|/|B1|, 1)``; a ``B2`` ghost hit
shrinks it by ``max(|B1|/|B2|, 1)``; either way the item comes back into
``T2``. Eviction takes ``T1``'s least recent item while ``T1`` is above
``p``, and ``T2``'s otherwise. The ghost directory holds about one cache of
evicted items (``|T1| + |B1| <= c``, ``|B1| + |B2| <= c``).

Adapted to leaf-only radix eviction:

* **The lists** hold nodes (sizes in tokens, so ``p`` and ``c`` are tokens;
  ``c`` is the largest the cache has held). Only evictable leaves can be
  evicted; an inner node past its turn waits until its subtree is gone.
* **An access** is a lookup reaching the node (``on_hit``, every node of the
  matched path): it moves the node to the most recent end of ``T2``. A new
  leaf (``on_insert``) is the miss: it enters ``T1``, or ``T2`` on a ghost
  hit. ``insert`` walking existing nodes is not an access.
* **A ghost** is the key of an evicted node: its parent's prefix fingerprint
  and its first token, so the request that brings evicted tokens back hits
  it however the new leaf is cut. A ghost hit adapts ``p`` by its size in
  tokens times ARC's step.
* **The lists become deadlines** (see ``_common``): a node's score is the
  eviction clock at which it falls off its list. ``T1`` keeps a node for
  ``T_1``, ``T2`` for ``T_2`` after its last access; Little's law sets them
  so that ``T1`` holds ``p`` tokens and ``T2`` the rest (each list stays an
  exact LRU). ARC's eviction-time test ``|T1| > p`` thus becomes a deadline
  fixed at the node's own event, with the ``p`` of that moment: adapting
  ``p`` changes the deadlines nodes get from then on, never a score already
  in the eviction heap, so the heap stays exact. ``T1`` holds ``p`` on
  average, not at every eviction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

from ._common import BranchKeys, Ghosts, Lifetimes, Occupancy

if TYPE_CHECKING:
    from radix_evict import TreeNode

T1, T2 = 0, 1


class ARCConfig(PolicyConfig):
    """Keys of the ``arc`` policy (strict: unknown keys and coercion are errors)."""

    ghost_capacity: float = Field(
        default=1.0,
        ge=0,
        le=16,
        description=(
            "Size of the ghost directory as a multiple of the cache: |T1| + |B1| and "
            "|B1| + |B2| stay within it (ARC's is 1; 0 turns ghosts, and so adaptation, off)."
        ),
    )
    initial_target: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "Starting target p for the recency list T1, as a fraction of the cache "
            "(ARC starts at 0 and lets ghost hits move it)."
        ),
    )


class _State:
    __slots__ = ("end", "life", "lst")

    def __init__(self, lst: int, end: float, life: float) -> None:
        self.lst = lst
        self.end = end  # the eviction clock at which it falls off its list: the score
        self.life = life  # the lifetime that deadline was given

    def copy(self) -> _State:
        return _State(self.lst, self.end, self.life)


class ARCPolicy(EvictionPolicy[ARCConfig]):
    """Lowest deadline goes first: when the node falls off ARC's T1 or T2, on the eviction clock."""

    name = "arc"

    def __init__(self, config: ARCConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self._ghost_capacity = cfg.ghost_capacity
        self._p = cfg.initial_target  # p / c: the fraction of the cache T1 should hold
        self._clock = 0.0  # L: the score of the last victim
        self._state: dict[TreeNode, _State] = {}
        self._sizes = [0, 0]  # tokens in T1, T2
        self._lifetimes = Lifetimes(2)
        self._b1 = Ghosts()
        self._b2 = Ghosts()
        self._keys = BranchKeys()
        self._occupancy = Occupancy()
        self.ghost_hits = [0, 0]  # hits in B1, B2

    # ------------------------------------------------------------------ views (tests, reports)
    @property
    def target_fraction(self) -> float:
        """ARC's ``p / c``: the share of the cache the recency list T1 should hold."""
        return self._p

    @property
    def target(self) -> float:
        """ARC's ``p`` in tokens."""
        return self._p * self._occupancy.peak_tokens

    @property
    def clock(self) -> float:
        return self._clock

    def list_of(self, node: TreeNode) -> str:
        """``"T1"`` or ``"T2"``."""
        return "T1" if self._state[node].lst == T1 else "T2"

    def ghost_list_of(self, node: TreeNode) -> str | None:
        """``"B1"``, ``"B2"`` or None: where the item ``node`` is (its branch key) is a ghost."""
        key = self._keys.of(node)
        return "B1" if key in self._b1 else "B2" if key in self._b2 else None

    @property
    def sizes(self) -> dict[str, int]:
        """Tokens in T1, T2 and the ghost lists B1, B2."""
        return {"T1": self._sizes[T1], "T2": self._sizes[T2],
                "B1": self._b1.tokens, "B2": self._b2.tokens}

    def _lifetime(self, lst: int) -> float:
        return self._lifetimes.lifetime(lst, self._p if lst == T1 else 1.0 - self._p)

    def _deadline(self, lst: int) -> float:
        return self._lifetimes.deadline(lst, self._clock, self._p if lst == T1 else 1.0 - self._p)

    def _trim_ghosts(self) -> None:
        """ARC's directory bounds, in tokens: |T1| + |B1| <= g c and |B1| + |B2| <= g c."""
        room = self._ghost_capacity * self._occupancy.peak_tokens
        self._b1.trim(max(0.0, room - self._sizes[T1]))
        self._b2.trim(max(0.0, room - self._b1.tokens))

    # ------------------------------------------------------------------ score
    def score(self, node: TreeNode) -> float:
        st = self._state.get(node)
        return st.end if st is not None else self._clock

    # ------------------------------------------------------------------ callbacks
    # Each changes only the score of the node it is about; p changes only future deadlines.
    def on_insert(self, node: TreeNode) -> None:
        occ = self._occupancy
        occ.inserted(node)
        n = node.num_tokens
        lst = T1
        if self._b1 or self._b2:
            key = self._keys.of(node)
            b1, b2 = self._b1, self._b2
            c = max(occ.peak_tokens, 1)
            if key in b1:  # T1 was too small: grow p
                step = max(b2.tokens / b1.tokens, 1.0)
                size = b1.pop(key) or 0
                self._p = min(1.0, self._p + size * step / c)
                self.ghost_hits[0] += 1
                lst = T2
            elif key in b2:  # T2 was too small: shrink p
                step = max(b1.tokens / b2.tokens, 1.0)
                size = b2.pop(key) or 0
                self._p = max(0.0, self._p - size * step / c)
                self.ghost_hits[1] += 1
                lst = T2
        life = self._lifetime(lst)
        self._state[node] = _State(lst, self._deadline(lst), life)
        self._sizes[lst] += n
        self._lifetimes.add(lst, n, occ.peak_tokens)
        if self._b1 or self._b2:
            self._trim_ghosts()

    def on_hit(self, node: TreeNode) -> None:
        st = self._state.get(node)
        if st is None:
            return
        n = node.num_tokens
        clock = self._clock
        life = self._lifetime(T2)
        end = self._deadline(T2)
        flows = self._lifetimes
        if st.lst == T1:  # seen twice: to T2; its stay in T1 ends early
            if st.end > clock and st.life > 0:
                flows.remove(T1, n * min(1.0, (st.end - clock) / st.life))
            self._sizes[T1] -= n
            self._sizes[T2] += n
            flows.add(T2, n, self._occupancy.peak_tokens)
            st.lst = T2
        else:  # to T2's most recent end: a hit never brings the deadline forward
            if st.end > end:
                end = st.end
            extension = end - max(st.end, clock)
            flows.add(T2, n * (extension / life if life > 0 else 1.0),
                      self._occupancy.peak_tokens)
        st.end = end
        st.life = life

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        st = self._state.get(tail)
        if st is not None:
            self._state[head] = st.copy()
        self._keys.split(head, tail)
        self._occupancy.split()

    def on_evict(self, node: TreeNode) -> None:
        st = self._state.pop(node, None)
        n = node.num_tokens
        if st is not None:
            if st.end > self._clock:
                self._clock = st.end
            self._sizes[st.lst] -= n
            if self._ghost_capacity > 0:
                room = self._ghost_capacity * self._occupancy.peak_tokens
                ghosts = self._b1 if st.lst == T1 else self._b2
                ghosts.add(self._keys.of(node), n, room)
                self._trim_ghosts()
        self._keys.forget(node)
        self._occupancy.evicted(node)
