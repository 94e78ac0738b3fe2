"""Policies that order by how many requests used a prefix: lfu and slru."""

from __future__ import annotations

from pydantic import Field

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import ConfigWarning, EvictionPolicy, PolicyConfig


class LFUPolicy(EvictionPolicy):
    """Fewest hits first, least recent among equals."""

    name = "lfu"

    def score(self, node: TreeNode) -> tuple[int, float]:
        return (node.hit_count, node.last_access_time)


class SLRUConfig(PolicyConfig):
    protected_threshold: int = Field(
        default=2,
        ge=0,  # SGLang accepts 0 too: every prefix starts protected (plain LRU order)
        description=(
            "Hits at which a prefix moves from the probationary to the protected segment "
            "(0 or 1: every cached prefix is protected, so the order is plain LRU)."
        ),
    )

    def config_warnings(self) -> list[ConfigWarning]:
        if self.protected_threshold > 0:
            return []
        return [ConfigWarning(
            ("protected_threshold",), "plain_lru",
            f"protected_threshold {self.protected_threshold}: every node counts as protected "
            "(a hit count is never below it), so slru is plain LRU",
            hint="use lru, or a threshold >= 1")]


class SLRUPolicy(EvictionPolicy[SLRUConfig]):
    """Segmented LRU: the probationary segment empties before the protected one."""

    name = "slru"

    def __init__(self, config: SLRUConfig | None = None) -> None:
        super().__init__(config)
        self._threshold = self.config.protected_threshold

    def score(self, node: TreeNode) -> tuple[int, float]:
        return (1 if node.hit_count >= self._threshold else 0, node.last_access_time)
