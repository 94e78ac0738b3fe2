"""``reuse``: LRU that gives a head start to prefixes requests came back for, ghosts included.

LRU ranks a prefix by when it was last touched, and inserting counts as a
touch: a one-off prompt, or the page holding a reply nobody will quote, stays
as long as a conversation's history that the next turn is about to read.
What tells them apart is whether a *lookup* (``match_prefix``, a request
that wanted the prefix) has ever reached the node. ``reuse`` scores::

    last_access_time + credit   if a lookup reached the node (or its prefix is a ghost)
    last_access_time            otherwise

so a prefix that was reused outlives a slightly newer one that never was, by
``credit`` ticks of the cache's logical clock; after that, recency wins again
(no protected set that never ages, the failure of ``slru`` on conversation
traces).

Ghost entries, as in ARC: when a reused node is evicted, the fingerprint of
the prefix it ends is remembered (the last ``ghosts`` of them). A new leaf
that ends a remembered prefix was evicted too early: it starts with the credit.

It needs the lifecycle callbacks (``on_hit``, ``on_split``, ``on_insert``,
``on_evict``), and it keeps the driver exact: each callback changes only the
score of the node it is about, which the cache offers again afterwards.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig
from radix_evict.policies.fingerprint import Fingerprint, PrefixFingerprints

if TYPE_CHECKING:
    from radix_evict import TreeNode


class ReuseConfig(PolicyConfig):
    """Keys of the ``reuse`` policy (strict: unknown keys and coercion are errors)."""

    credit: int = Field(
        default=2000,
        ge=0,
        description=(
            "Logical-clock ticks of extra lifetime for a prefix a lookup has reached (or that "
            "returned after its eviction); 0 is exactly LRU."
        ),
    )
    ghosts: int = Field(
        default=8192,
        ge=0,
        description="How many evicted reused prefixes to remember (0: no ghost entries).",
    )


class ReusePolicy(EvictionPolicy):
    """Lowest ``last_access_time (+ credit if reused)`` goes first."""

    name = "reuse"
    Config = ReuseConfig

    def __init__(self, config: ReuseConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        assert isinstance(cfg, ReuseConfig)
        self._credit = cfg.credit
        self._capacity = cfg.ghosts
        self._reused: set[TreeNode] = set()
        self._ghosts: OrderedDict[Fingerprint, None] = OrderedDict()
        self._fingerprints = PrefixFingerprints()

    def score(self, node: TreeNode) -> int:
        if node in self._reused:
            return node.last_access_time + self._credit
        return node.last_access_time

    # Lifecycle callbacks: each changes only the score of the node it is about.
    def on_hit(self, node: TreeNode) -> None:
        self._reused.add(node)

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        if tail in self._reused:  # the head ends a prefix of a reused one
            self._reused.add(head)

    def on_insert(self, node: TreeNode) -> None:
        if self._ghosts and self._fingerprints.of(node) in self._ghosts:
            self._reused.add(node)

    def on_evict(self, node: TreeNode) -> None:
        if node in self._reused:
            self._reused.discard(node)
            if self._capacity:
                ghosts = self._ghosts
                ghosts[self._fingerprints.of(node)] = None
                if len(ghosts) > self._capacity:
                    ghosts.popitem(last=False)
        self._fingerprints.forget(node)
