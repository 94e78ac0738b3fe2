"""What a replay returns: its figures, per tier and over time, and a policy x workload matrix.

Every result has ``to_dict()`` giving plain JSON types; names follow the
side-by-side harness's JSON where it has them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from radix_evict.sim.winner import WINNER_RULE


@dataclass
class TierStats:
    """Hit figures of the requests that share one priority (or one request kind)."""

    key: str
    requests: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hit_rate": self.hit_rate}


@dataclass(frozen=True)
class TimelinePoint:
    """Hit rate of one window of consecutive arrivals (for plots)."""

    requests: int
    time_s: float
    hit_rate: float
    cumulative_hit_rate: float


@dataclass(frozen=True)
class RequestRecord:
    """One request's outcome (kept only with ``replay(..., keep_requests=True)``)."""

    rid: str
    arrival: float
    priority: int
    kind: str
    prompt_tokens: int
    hit_tokens: int
    admitted: bool

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.hit_tokens


@dataclass
class HostFigures:
    """A two-tier replay's figures: where the prompt tokens were found, and the traffic.

    ``device_hit_rate + host_hit_rate + miss_rate`` is 1 (of the prompt tokens);
    a host hit is a prompt token loaded back from the host tier.
    """

    host_tokens: int
    write_policy: str
    write_threshold: int
    host_policy: str
    device_hit_tokens: int
    host_hit_tokens: int
    device_hit_rate: float
    host_hit_rate: float
    miss_rate: float
    written_tokens: int
    loaded_tokens: int
    host_evicted_tokens: int
    host_evictions: int
    reclaimed_tokens: int
    dropped_tokens: int
    write_failed_tokens: int
    load_back_failed_tokens: int
    copy_wait_s: float = 0.0  # timed replay: virtual seconds steps waited for host copies
    admission: str = "none"  # the host tier's admission policy (radix_evict.cache.admission)
    admission_rejected_tokens: int = 0  # backups it refused
    pcie_tokens: int = 0  # written + loaded: tokens that crossed PCIe, either way
    pcie_cost_model: str | None = None  # whose KV size pcie_bytes counts
    pcie_bytes: int | None = None  # pcie_tokens x its kv_bytes_per_token (None: no size known)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReplayResult:
    """Figures of one replay; names follow the harness's JSON where it has them."""

    workload: str
    policy: str
    label: str
    policy_config: dict[str, Any] | None
    config_source: str
    pool_tokens: int
    page_size: int
    requests: int
    admitted: int
    failed: int
    prompt_tokens: int
    hit_tokens: int
    uncached_tokens: int
    hit_rate: float
    p50_uncached: float
    p90_uncached: float
    p99_uncached: float
    mean_uncached: float
    evicted_tokens: int
    evict_calls: int
    eviction_s: float  # CPU seconds of this thread inside cache.evict
    cache_s: float  # CPU seconds of this thread inside cache/pool operations (eviction too)
    wall_s: float  # wall seconds of the whole replay loop (workload events, bookkeeping too)
    req_per_s: float  # requests / cache_s: cache-operation throughput per core
    stats: dict[str, Any]
    tiers: dict[int, TierStats]
    kinds: dict[str, TierStats]
    timeline: list[TimelinePoint]
    end_protected_tokens: int = 0
    end_evictable_tokens: int = 0
    end_available_tokens: int = 0
    workload_info: dict[str, Any] = field(default_factory=dict)
    per_request: list[RequestRecord] | None = None
    timing: Any = None  # radix_evict.sim.timed.figures.TimedFigures of a timed replay
    host: HostFigures | None = None  # a two-tier replay's host-tier figures

    @property
    def tier_hit_rates(self) -> dict[int, float]:
        """Hit rate per request priority."""
        return {p: t.hit_rate for p, t in sorted(self.tiers.items())}

    def to_dict(self) -> dict[str, Any]:
        skip = ("tiers", "kinds", "timeline", "per_request", "timing", "host")
        d: dict[str, Any] = {k: v for k, v in asdict(self).items() if k not in skip}
        d["tiers"] = [{**t.to_dict(), "priority": p} for p, t in sorted(self.tiers.items())]
        d["tier_hit_rates"] = {str(p): r for p, r in self.tier_hit_rates.items()}
        d["kinds"] = {k: t.to_dict() for k, t in sorted(self.kinds.items())}
        d["timeline"] = [asdict(p) for p in self.timeline]
        if self.per_request is not None:
            d["per_request"] = [asdict(r) for r in self.per_request]
        if self.timing is not None:
            d.update(self.timing.to_dict())
        if self.host is not None:
            d.update(self.host.to_dict())  # api.md: the host figures sit beside the others
        return d


@dataclass
class MatrixResult:
    """Policies x workloads, with a winner per workload."""

    workloads: list[dict[str, Any]]
    policies: list[str]
    results: list[ReplayResult]
    winners: dict[str, str]  # workload -> winning label (core.sim.winner.choose_winner)
    tie_breaks: dict[str, bool] = field(default_factory=dict)  # workload -> the p99 rule decided

    def cell(self, workload: str, label: str) -> ReplayResult:
        for r in self.results:
            if r.workload == workload and r.label == label:
                return r
        raise KeyError((workload, label))

    def to_dict(self) -> dict[str, Any]:
        return {
            "workloads": self.workloads,
            "policies": self.policies,
            "results": [r.to_dict() for r in self.results],
            "winners": dict(self.winners),
            "winner_rule": WINNER_RULE,
        }



def stats_dict(stats: Any) -> dict[str, Any]:
    """cache.stats as a plain dict, whatever shape the cache gives it."""
    if stats is None:
        return {}
    for attr in ("as_dict", "to_dict", "model_dump", "_asdict"):
        fn = getattr(stats, attr, None)
        if callable(fn):
            return dict(fn())
    if isinstance(stats, Mapping):
        return dict(stats)
    return {k: v for k, v in vars(stats).items() if not k.startswith("_")}


