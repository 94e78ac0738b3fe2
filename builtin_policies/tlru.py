"""Tail-Optimized LRU (Zhang et al., arXiv:2510.15152).

A conversation whose history is L tokens and whose next prompt adds about
``next_prompt_estimate`` tokens keeps its next prefill under the TTFT budget
as long as ``L + next_prompt_estimate - threshold`` tokens of it stay cached.
Tokens past that budget cannot help the tail: they are "TEL-safe" and go
before anything else, then eviction falls back to plain LRU.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy, PolicyConfig


class TLRUConfig(PolicyConfig):
    threshold: int = Field(
        default=0,
        ge=0,
        description="Uncached prefill tokens the next turn may run within its TTFT budget.",
    )
    next_prompt_estimate: int = Field(
        default=0,
        ge=0,
        description="Expected tokens the next turn adds to a conversation (the paper's Q-hat).",
    )

    @model_validator(mode="after")
    def _threshold_above_estimate(self) -> TLRUConfig:
        if self.threshold <= self.next_prompt_estimate:
            raise ValueError(
                f"threshold ({self.threshold}) must be greater than next_prompt_estimate "
                f"({self.next_prompt_estimate}): otherwise no token is ever TEL-safe and "
                "T-LRU is exactly LRU; use policy 'lru' for that"
            )
        return self


class TLRUPolicy(EvictionPolicy[TLRUConfig]):
    """TEL-safe conversation tails first, then least recently used."""

    name = "tlru"

    def __init__(self, config: TLRUConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self._slack = cfg.next_prompt_estimate - cfg.threshold

    def score(self, node: TreeNode) -> tuple[int, float]:
        budget = node.history_len + self._slack
        if budget < 0:
            budget = 0
        tel_safe = node.prefix_len - node.num_tokens >= budget
        return (-1 if tel_safe else 0, node.last_access_time)
