"""What an engine replay measured: token counts, TTFT and the generated tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import Tensor


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile; 0.0 for no values (nothing was served)."""
    return float(np.percentile(values, q)) if values else 0.0


@dataclass
class EngineResult:
    """One replay. TTFT runs from a request's admission (match_prefix) to its
    first token: lookup, eviction, allocation and prefill, without queueing,
    so policies compare on the work their cache state causes.
    """

    policy: str
    use_cache: bool
    device: str
    requests: int
    dropped: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    uncached_tokens: int = 0  # prompt tokens the cache did not have (plen - prefix_len)
    prefill_tokens: int = 0  # tokens the model ran prefill on (its own counter)
    decode_tokens: int = 0
    wall_seconds: float = 0.0
    cache_seconds: float = 0.0  # inside the cache's calls (lookup, locks, evict, insert)
    ttft_ms: list[float | None] = field(default_factory=list)
    hits: list[int | None] = field(default_factory=list)  # cached prompt tokens per request
    generated: list[list[int] | None] = field(default_factory=list)
    logits: list[Tensor | None] = field(default_factory=list)
    cache_stats: dict[str, float] = field(default_factory=dict)

    @classmethod
    def empty(cls, n: int, device: str, use_cache: bool) -> EngineResult:
        """A result with one (empty) entry per request."""
        return cls(policy="", use_cache=use_cache, device=device, requests=n,
                   ttft_ms=[None] * n, hits=[None] * n, generated=[None] * n, logits=[None] * n)

    @property
    def completed(self) -> int:
        """Requests that produced output."""
        return self.requests - self.dropped

    @property
    def hit_rate(self) -> float:
        """Cached share of the served prompt tokens."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def ttft(self, q: float) -> float:
        """TTFT percentile ``q`` (0..100) in milliseconds over served requests."""
        return percentile([t for t in self.ttft_ms if t is not None], q)

    @property
    def cache_ms_per_request(self) -> float:
        """The cache's own time per served request, in ms (beside TTFT: what reuse costs)."""
        return self.cache_seconds * 1e3 / self.completed if self.completed else 0.0

    @property
    def evicted_tokens(self) -> int:
        """Tokens the cache evicted (0 without a cache)."""
        return int(self.cache_stats.get("evicted_tokens", 0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-request tokens or logits)."""
        return {
            "policy": self.policy,
            "use_cache": self.use_cache,
            "device": self.device,
            "requests": self.requests,
            "completed": self.completed,
            "dropped": self.dropped,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "uncached_tokens": self.uncached_tokens,
            "prefill_tokens": self.prefill_tokens,
            "decode_tokens": self.decode_tokens,
            "hit_rate": self.hit_rate,
            "evicted_tokens": self.evicted_tokens,
            "ttft_ms_p50": self.ttft(50),
            "ttft_ms_p90": self.ttft(90),
            "ttft_ms_p99": self.ttft(99),
            "wall_seconds": self.wall_seconds,
            "cache_ms_per_request": self.cache_ms_per_request,
        }
