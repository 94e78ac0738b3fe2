"""Tail-Optimized LRU (Zhang et al., arXiv:2510.15152).

A conversation whose history is L tokens and whose next prompt adds about
``next_prompt_estimate`` tokens keeps its next prefill under the TTFT budget
as long as ``L + next_prompt_estimate - threshold`` tokens of it stay cached.
Tokens past that budget cannot help the tail: they are "TEL-safe" and go
before anything else, then eviction falls back to plain LRU.

tlru has no sensible defaults, so its spec carries :func:`derive_config`:
a simulation run without a tlru config takes one derived from the
workload's measured next-turn growth.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy, PolicyConfig
from radix_evict.policies.derive import DerivedConfig, WorkloadStats

THRESHOLD_ROUNDING = 64


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


def threshold_rule(estimate: int) -> int:
    """threshold = 2 x estimate, rounded up to a multiple of 64, and > estimate.

    Why: T-LRU keeps ``history + estimate - threshold`` tokens of a conversation
    cached, so at most ``threshold - estimate`` (about one estimate) of its tail
    can be evicted; a returning turn then re-prefills that tail plus its own
    growth, which stays near the threshold instead of the whole history.
    """
    raw = max(2 * estimate, estimate + 1)
    return -(-raw // THRESHOLD_ROUNDING) * THRESHOLD_ROUNDING


RULE = (
    "next_prompt_estimate = mean next-turn growth, threshold = 2 x estimate "
    f"rounded up to a multiple of {THRESHOLD_ROUNDING}"
)


def derive_config(stats: WorkloadStats) -> DerivedConfig:
    """next_prompt_estimate = the mean next-turn growth; threshold by :func:`threshold_rule`."""
    mean = stats.mean_growth
    estimate = round(mean)
    threshold = threshold_rule(estimate)
    derivation = (
        f"next_prompt_estimate = {estimate}: mean next-turn growth {mean:.1f} tokens over "
        f"{stats.samples:,} {stats.growth_what}; threshold = {threshold}: 2 x estimate rounded "
        f"up to a multiple of {THRESHOLD_ROUNDING} (must exceed the estimate; at most about one "
        f"estimate of a conversation's tail is then TEL-safe, so a returning turn re-prefills "
        f"about threshold tokens instead of its whole history)"
    )
    return DerivedConfig(
        config={"threshold": threshold, "next_prompt_estimate": estimate},
        derivation=derivation,
        rule=RULE,
        details={"threshold": threshold, "next_prompt_estimate": estimate,
                 "mean_growth": mean, "samples": stats.samples},
    )
