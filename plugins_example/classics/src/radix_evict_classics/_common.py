"""What the classic policies share when they are brought to leaf-only radix eviction.

The classic algorithms pick a victim by looking at global state at the moment
of eviction (ARC: is ``|T1|`` above the target ``p``? S3-FIFO: is the small
queue over 10%?). radix-evict's driver cannot ask that: it keeps every
evictable leaf in a heap under the score it had when it was last offered,
and a callback may change the score of the node it is about and no other
(``radix_evict.policies.lifecycle``). So the queue algorithms here are
expressed as **deadlines on an eviction clock**, fixed at a node's own
events:

* An inflation value ``L``, as in GreedyDual (Young 1994; Cao & Irani
  1997): the score of the last victim. Every score
  is ``L`` at the node's last event plus how long its queue keeps it. The
  driver always evicts the lowest score, so ``L`` only grows, and a FIFO or
  LRU queue is exactly "deadline = L at entry (or last access) + lifetime".
* :class:`Lifetimes`: how long each queue keeps an item, from Little's law.
  A queue that should hold a fraction ``target`` of the cache while a share
  ``s`` of the inflow enters it must keep each entry ``target / s`` (in
  ``L`` units; only ratios matter, the clock scales itself). The shares are
  measured, in tokens, over roughly the last cache-full of inflow.
* :class:`BranchKeys`: the stable identity of an item. In a radix tree a
  prefix that comes back after its node was evicted is rarely cut at the
  same place, but it starts at the same place: the node's parent prefix and
  its first token. The key is the parent's
  :class:`~radix_evict.policies.fingerprint.PrefixFingerprints` value mixed
  with that token, so it survives eviction and re-insertion, and is the same
  in every process (no ``hash()`` of bytes).
* :class:`Ghosts`: a FIFO of evicted items' keys, bounded in tokens.
* :class:`Occupancy`: the cached tokens and nodes, and their high-water
  marks (the policy's estimate of the cache size, which it is never told).

``RadixCache.reset()`` tells a policy nothing: state about nodes that a
reset dropped stays until the policy object is dropped.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import TYPE_CHECKING

from radix_evict.policies.fingerprint import PrefixFingerprints

if TYPE_CHECKING:
    from radix_evict import TreeNode

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: spreads consecutive values
_ORDER = sys.byteorder  # keys are int64 in native order (numpy's)

# A queue with (almost) no inflow would get an unbounded lifetime; its share is
# floored here, so no lifetime exceeds 100 x its target.
MIN_SHARE = 0.01


def mix64(x: int) -> int:
    """splitmix64's finaliser: a 64-bit integer hash, the same in every process."""
    x &= MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class BranchKeys:
    """The key of the item a node is: its parent's prefix fingerprint and its first token.

    Memoised per node. A split gives the head the tail's key (same parent,
    same first token) and the tail a new one (its parent is now the head).
    """

    __slots__ = ("_fingerprints", "_memo")

    def __init__(self) -> None:
        self._fingerprints = PrefixFingerprints()
        self._memo: dict[TreeNode, int] = {}

    def of(self, node: TreeNode) -> int:
        key = self._memo.get(node)
        if key is None:
            parent = node.parent
            base = self._fingerprints.of(parent) if parent is not None else 0
            first = int.from_bytes(node.key_bytes[:8], _ORDER, signed=True)
            key = mix64(base * GOLDEN + first)
            self._memo[node] = key
        return key

    def split(self, head: TreeNode, tail: TreeNode) -> None:
        key = self._memo.pop(tail, None)
        if key is not None:
            self._memo[head] = key

    def forget(self, node: TreeNode) -> None:
        self._memo.pop(node, None)
        self._fingerprints.forget(node)


class Lifetimes:
    """Per-queue lifetimes on the eviction clock, from Little's law.

    ``add(q, tokens)`` records inflow into queue ``q``: a token entering for
    one full lifetime counts 1, a refresh that only extends a stay counts the
    fraction of a lifetime it adds, a stay cut short is taken back with
    ``remove``. ``lifetime(q, target)`` is ``target / share_q``, and
    ``deadline`` the end of a stay that starts now. The counts
    halve whenever their total passes ``window`` tokens, so the shares follow
    the recent traffic.
    """

    __slots__ = ("_flow", "_last", "_total")

    def __init__(self, queues: int) -> None:
        self._flow = [0.0] * queues
        self._total = 0.0
        self._last = [0.0] * queues

    def deadline(self, q: int, clock: float, target: float) -> float:
        """When an item entering queue ``q`` now leaves it: ``clock + lifetime``.

        Never earlier than the last deadline handed out for ``q``: a lifetime
        that shrinks must not let a newer entry go before an older one, so
        each queue stays exactly in entry order (ties go by recency).
        """
        end = clock + self.lifetime(q, target)
        last = self._last
        if end < last[q]:
            return last[q]
        last[q] = end
        return end

    def add(self, q: int, tokens: float, window: float) -> None:
        if tokens <= 0:
            return
        flow = self._flow
        flow[q] += tokens
        self._total += tokens
        if self._total > window > 0:
            for i in range(len(flow)):
                flow[i] *= 0.5
            self._total *= 0.5

    def remove(self, q: int, tokens: float) -> None:
        if tokens <= 0:
            return
        taken = min(tokens, self._flow[q])
        self._flow[q] -= taken
        self._total -= taken

    def share(self, q: int) -> float:
        total = self._total
        return self._flow[q] / total if total > 0 else 0.0

    def lifetime(self, q: int, target: float) -> float:
        total = self._total
        if total <= 0:
            return target
        share = self._flow[q] / total
        return target / (share if share > MIN_SHARE else MIN_SHARE)


class Ghosts:
    """Keys of evicted items with their sizes in tokens, oldest first, bounded in tokens."""

    __slots__ = ("_entries", "tokens")

    def __init__(self) -> None:
        self._entries: OrderedDict[int, int] = OrderedDict()
        self.tokens = 0

    def __contains__(self, key: int) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, key: int, tokens: int, capacity: float) -> None:
        entries = self._entries
        old = entries.pop(key, None)
        if old is not None:
            self.tokens -= old
        entries[key] = tokens
        self.tokens += tokens
        self.trim(capacity)

    def pop(self, key: int) -> int | None:
        """Remove ``key`` (a ghost hit); its size in tokens, or None if it is no ghost."""
        tokens = self._entries.pop(key, None)
        if tokens is not None:
            self.tokens -= tokens
        return tokens

    def trim(self, capacity: float) -> None:
        entries = self._entries
        while self.tokens > capacity and entries:
            _, tokens = entries.popitem(last=False)
            self.tokens -= tokens


class Occupancy:
    """Cached tokens and nodes as the callbacks report them, and their high-water marks."""

    __slots__ = ("nodes", "peak_nodes", "peak_tokens", "tokens")

    def __init__(self) -> None:
        self.tokens = 0
        self.nodes = 0
        self.peak_tokens = 0
        self.peak_nodes = 0

    def inserted(self, node: TreeNode) -> None:
        self.tokens += node.num_tokens
        self.nodes += 1
        if self.tokens > self.peak_tokens:
            self.peak_tokens = self.tokens
        if self.nodes > self.peak_nodes:
            self.peak_nodes = self.nodes

    def split(self) -> None:
        self.nodes += 1
        if self.nodes > self.peak_nodes:
            self.peak_nodes = self.nodes

    def evicted(self, node: TreeNode) -> None:
        self.tokens -= node.num_tokens
        self.nodes -= 1
