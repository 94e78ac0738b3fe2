"""``sieve``: SIEVE, a FIFO queue with a moving hand and one visited bit per item.

Source: Yazhuo Zhang, Juncheng Yang, Yao Yue, Ymir Vigfusson and K. V.
Rashmi, "SIEVE is Simpler than LRU: an Efficient Turn-Key Eviction Algorithm
for Web Caches", NSDI 2024.

SIEVE keeps items in insertion order. A hit sets the item's visited bit and
moves nothing. To evict, a hand walks from the oldest item towards the
newest: a visited item keeps its place and loses its bit, the first
unvisited one is evicted, and the hand stays there for the next eviction
(wrapping round to the oldest at the end). New items enter at the newest end.

Adapted to leaf-only radix eviction:

* **The queue** is every cached node in creation order (``creation_time``;
  the head a split creates shares its tail's place). Only evictable leaves
  can be evicted. The hand passes over a node it cannot evict (an inner or
  locked one) without looking at it: a visited one loses its mark as usual,
  an unvisited one is *overdue*, and goes first once it becomes an evictable
  leaf, as it would have gone when the hand reached it (so a prefix whose
  last child was evicted follows it, as under FIFO, unless a lookup visited
  it since the hand last passed).
* **An access** is a lookup reaching the node (``on_hit``, every node of the
  matched path); ``insert`` walking existing nodes is not one, and a new
  leaf enters unvisited at the newest end.
* **No ghosts**: SIEVE has none.

The hand and the marks become scores without a rescan: a node's score is
``(sweep, creation_time)``, the sweep of the hand that will evict it, so the
driver's lowest score is exactly where the hand goes next. An unvisited node
is due in the current sweep (ahead of the hand, or overdue behind it); a hit
marks the node for one sweep after the one in which the hand next reaches
it. The hand moves only to the victim the driver pops, the lowest score in
the heap, so every leaf in the heap keeps its score as the hand moves.

``max_visits`` above 1 turns the bit into a counter (each hit buys one more
sweep, up to ``max_visits``, and each pass of the hand spends one), the
CLOCK-with-counter variant the paper compares against.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

if TYPE_CHECKING:
    from radix_evict import TreeNode


class SieveConfig(PolicyConfig):
    """Keys of the ``sieve`` policy (strict: unknown keys and coercion are errors)."""

    max_visits: int = Field(
        default=1,
        ge=1,
        le=1024,
        description=(
            "Sweeps of the hand a lookup hit keeps a node for, at most: 1 is SIEVE's visited "
            "bit; more makes it a capped counter that each hit raises and each pass lowers."
        ),
    )


class SievePolicy(EvictionPolicy[SieveConfig]):
    """Lowest ``(sweep, creation_time)`` goes first: where SIEVE's hand stops next."""

    name = "sieve"

    def __init__(self, config: SieveConfig | None = None) -> None:
        super().__init__(config)
        self._max_visits = self.config.max_visits
        self._sweep = 0  # the hand: the sweep and position of the last victim
        self._hand = -math.inf
        self._marked: dict[TreeNode, int] = {}  # node -> the sweep its marks carry it to

    @property
    def hand(self) -> tuple[int, float]:
        """The hand: (sweep, creation_time) of the last node evicted."""
        return (self._sweep, self._hand)

    def visits(self, node: TreeNode) -> int:
        """The node's visited count now (0 or 1 with the default ``max_visits``)."""
        marked = self._marked.get(node)
        natural = self._natural(node.creation_time)
        return marked - natural if marked is not None and marked > natural else 0

    def _natural(self, position: float) -> int:
        """The sweep in which the hand next reaches ``position``."""
        return self._sweep if position >= self._hand else self._sweep + 1

    def score(self, node: TreeNode) -> tuple[int, float]:
        # Unvisited: this sweep (behind the hand, that is overdue). Visited: its mark.
        sweep = self._sweep
        marked = self._marked.get(node)
        if marked is not None and marked > sweep:
            sweep = marked
        return (sweep, node.creation_time)

    # Lifecycle callbacks: each changes only the score of the node it is about.
    def on_hit(self, node: TreeNode) -> None:
        natural = self._natural(node.creation_time)
        marked = self._marked.get(node)
        current = marked if marked is not None and marked > natural else natural
        if current < natural + self._max_visits:
            self._marked[node] = current + 1

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        marked = self._marked.get(tail)
        if marked is not None:
            self._marked[head] = marked

    def on_evict(self, node: TreeNode) -> None:
        # The driver's minimum: the hand moves there (an overdue node leaves it where it is).
        hand = self.score(node)
        if hand > (self._sweep, self._hand):
            self._sweep, self._hand = hand
        self._marked.pop(node, None)
