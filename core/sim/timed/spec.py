"""Everything a timed replay needs beyond the untimed one, in one picklable value."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import DEFAULT_COST_MODEL, CostModel, load_cost_model
from radix_evict.sim.timed.scheduler import SchedulerSpec

__all__ = ["TimingSpec"]


@dataclass(frozen=True)
class TimingSpec:
    """Arrivals, scheduler, cost model and SLOs of a timed replay (sent to workers as is)."""

    cost_model: CostModel = field(default_factory=lambda: load_cost_model(DEFAULT_COST_MODEL))
    arrivals: ArrivalSpec = field(default_factory=ArrivalSpec)
    scheduler: SchedulerSpec = field(default_factory=SchedulerSpec)
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None

    def __post_init__(self) -> None:
        for name in ("slo_ttft_ms", "slo_tpot_ms"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be a positive number of milliseconds, got {v!r}")

    def describe(self) -> dict[str, Any]:
        return {"cost_model": self.cost_model.describe(), "arrivals": self.arrivals.describe(),
                "scheduler": self.scheduler.describe(), "slo_ttft_ms": self.slo_ttft_ms,
                "slo_tpot_ms": self.slo_tpot_ms}
