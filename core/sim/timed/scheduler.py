"""The timed server's knobs and SGLang 0.5.23's scheduler constants.

:class:`SchedulerSpec` is what a user sets (``--max-running``,
``--chunked-prefill-size``, ...); the constants are SGLang's own, fixed
(``docs/replay.md`` says where each comes from). The server's modules
(:mod:`~radix_evict.sim.timed.server` lists them) read both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHECKPOINT_TOKENS", "CLIP_MAX_NEW_TOKENS", "INIT_NEW_TOKEN_RATIO", "MAX_RUNNING_CAP",
    "MIN_NEW_TOKEN_RATIO_FACTOR", "NEW_TOKEN_RATIO_DECAY_STEPS", "RETRACT_DECODE_STEPS",
    "SchedulerSpec",
]

# SGLang 0.5.23's constants (docs/replay.md says where each comes from).
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
CLIP_MAX_NEW_TOKENS = 4096
RETRACT_DECODE_STEPS = 20
MAX_RUNNING_CAP = 2048  # the default max_running_requests for a long-context model
# A chunk's checkpoint insert walks the request's whole path, one node per earlier
# checkpoint: with tiny chunks (--chunked-prefill-size 1) a prompt's checkpoints cost
# O(chunks^2). Unfinished prompts are checkpointed only every this many tokens (the last
# chunk always is), so a prompt costs O(prompt / CHECKPOINT_TOKENS) walks at most; chunks
# this size or larger checkpoint exactly as SGLang does.
CHECKPOINT_TOKENS = 256


@dataclass(frozen=True)
class SchedulerSpec:
    """The server's knobs (SGLang's names and, where it has one, its default)."""

    max_running: int | None = None  # None: SGLang's default, min(2048, pool tokens / 2)
    chunked_prefill_size: int = 8192  # 0: no chunking
    max_prefill_tokens: int = 16384
    reserve_decode: bool = True  # SGLang's new_token_ratio reservation for running requests

    def __post_init__(self) -> None:
        if self.max_running is not None and self.max_running < 1:
            raise ValueError(f"max_running must be >= 1, got {self.max_running!r}")
        if self.max_prefill_tokens < 1:
            raise ValueError(f"max_prefill_tokens must be >= 1, got {self.max_prefill_tokens!r}")
        if self.chunked_prefill_size < 0:
            raise ValueError(f"chunked_prefill_size must be >= 0, got "
                             f"{self.chunked_prefill_size!r}")

    def running_limit(self, pool_tokens: int) -> int:
        """``max_running``, or SGLang's default for a pool of ``pool_tokens``."""
        if self.max_running is not None:
            return self.max_running
        return max(1, min(MAX_RUNNING_CAP, pool_tokens // 2))

    def describe(self) -> dict[str, Any]:
        return {"max_running": self.max_running,
                "chunked_prefill_size": self.chunked_prefill_size,
                "max_prefill_tokens": self.max_prefill_tokens,
                "reserve_decode": self.reserve_decode}
