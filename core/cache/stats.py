"""Cache counters, the ones SGLang exports under --enable-metrics and a few more."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class CacheStats:
    """Cumulative counters of one :class:`~radix_evict.RadixCache`."""

    match_calls: int = 0
    queried_tokens: int = 0
    hit_tokens: int = 0
    insert_calls: int = 0
    inserted_tokens: int = 0
    duplicate_tokens_freed: int = 0
    evict_calls: int = 0
    evicted_tokens: int = 0
    evicted_nodes: int = 0
    eviction_seconds: float = 0.0
    reset_tokens: int = 0  # device KV freed by ``reset`` (so the ledgers still add up)

    @property
    def hit_rate(self) -> float:
        """Cached share of the prompt tokens asked for through ``match_prefix``."""
        return self.hit_tokens / self.queried_tokens if self.queried_tokens else 0.0

    def as_dict(self) -> dict[str, float]:
        d: dict[str, float] = asdict(self)
        d["hit_rate"] = self.hit_rate
        return d
