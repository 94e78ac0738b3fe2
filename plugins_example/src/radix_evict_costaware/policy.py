"""GreedyDual-Size-Frequency adapted to leaf-only radix eviction.

LRU treats every cached token alike, but they do not cost the same to get
back. Recomputing a leaf means prefilling its ``n`` tokens on top of the
``s`` tokens before it: per token, the MLP and projections cost the same
everywhere, while attention grows with the context. Relative to the
context-free part, the average token of the leaf costs about::

    cost_per_token = 1 + (s + (n - 1) / 2) / attention_span

where ``attention_span`` is the context length at which attending over the
context costs as much as the rest of the layer (roughly six times the hidden
size for a dense decoder). A token deep into a long conversation is
therefore dearer to lose than one right after the root.

GreedyDual-Size-Frequency (Cherkasova, 1998) keeps what is expensive per
byte and often used: ``H = L + frequency * cost / size``, evicting the
lowest ``H``, where ``L`` (the "inflation" clock) rises as the cache ages.
Here the cache's own logical clock plays ``L``: a leaf's score is its
``last_access_time`` plus ``credit`` ticks for every unit of recompute cost
per slot, times its hit count. A leaf therefore outlives a slightly more
recent one that would be cheaper to recompute or has served fewer requests,
but nothing lives forever: once it goes unused for longer than its credit,
plain recency takes over. The score reads only the leaf's own fields, so the
cache's incremental heap stays exact, and ``credit = 0`` is exactly LRU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

if TYPE_CHECKING:
    from radix_evict import TreeNode


class GreedyDualConfig(PolicyConfig):
    """Keys of the ``gdsf`` policy (strict: unknown keys and coercion are errors)."""

    credit: float = Field(
        default=16.0,
        ge=0,
        description=(
            "Logical-clock ticks of extra lifetime a leaf earns per unit of recompute cost "
            "per slot (per hit when frequency is on); 0 makes gdsf plain LRU."
        ),
    )
    attention_span: int = Field(
        default=8192,
        ge=1,
        description=(
            "Context length (tokens) at which attention costs as much per token as the rest "
            "of the layer; about 6 x hidden size for a dense decoder."
        ),
    )
    frequency: bool = Field(
        default=True,
        description=(
            "Multiply the credit by the leaf's hit count (GDSF); false gives GreedyDual-Size."
        ),
    )


def recompute_cost_per_token(node: TreeNode, attention_span: int) -> float:
    """Relative prefill cost of one of ``node``'s tokens, were it evicted and recomputed."""
    n = node.num_tokens
    start = node.prefix_len - n
    return 1.0 + (start + (n - 1) / 2.0) / attention_span


class GreedyDualPolicy(EvictionPolicy[GreedyDualConfig]):
    """Lowest ``last_access_time + credit * hits * cost_per_token`` goes first.

    ``EvictionPolicy[GreedyDualConfig]`` makes ``GreedyDualConfig`` the model the
    registry validates against and the type of ``self.config``.
    """

    name = "gdsf"

    def __init__(self, config: GreedyDualConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self._credit = cfg.credit
        self._span = cfg.attention_span
        self._frequency = cfg.frequency

    def score(self, node: TreeNode) -> float:
        if self._credit == 0:
            return float(node.last_access_time)
        value = recompute_cost_per_token(node, self._span)
        if self._frequency:
            value *= max(node.hit_count, 1)
        return node.last_access_time + self._credit * value
