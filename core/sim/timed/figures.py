"""What a timed replay reports per policy: latency percentiles, SLOs, throughput, goodput.

Percentiles are over the requests that ran; a refused request has no
latency, but it counts against SLO attainment and goodput (it was not served
within any SLO). Every figure has ``to_dict()`` with the JSON keys of
``../shared/spec/api.md`` (``ttft_ms``, ``queue_ms``, ``tpot_ms``, ``e2e_ms``,
``slo_attainment``, ``throughput_rps``, ``goodput_rps``, ``retractions``).
``tpot_ms`` is None (JSON null) when no request had a TPOT (every answer one
token, or none served): a 0 there would read as infinitely fast decoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from radix_evict.sim.timed.server import JobRecord

__all__ = ["CDF_POINTS", "Latency", "TimedFigures", "summarize"]

CDF_POINTS = 101  # TTFT quantiles kept for the plot (0%, 1%, ..., 100%)


@dataclass(frozen=True)
class Latency:
    """Percentiles of one latency, in milliseconds (0 when nothing was measured)."""

    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    mean: float = 0.0
    max: float = 0.0

    @classmethod
    def of(cls, seconds: Sequence[float] | np.ndarray) -> Latency:
        ms = np.asarray(seconds, dtype=np.float64) * 1e3
        if ms.size == 0:
            return cls()
        p50, p90, p99 = (float(v) for v in np.percentile(ms, (50, 90, 99)))
        return cls(p50, p90, p99, float(ms.mean()), float(ms.max()))


@dataclass
class TimedFigures:
    """One timed replay's figures (virtual time)."""

    cost_model: str
    ttft_ms: Latency
    queue_ms: Latency
    tpot_ms: Latency | None  # None: no request had a TPOT (all one-token answers)
    e2e_ms: Latency
    finished: int
    refused: int
    retractions: int
    peak_queue: int
    makespan_s: float
    busy_s: float
    mean_in_system: float  # time-average of requests queued or running (from the server's state)
    throughput_rps: float
    output_tps: float
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None
    slo_attainment: float | None
    goodput_rps: float | None
    refusals: list[str] = field(default_factory=list)  # the first few reasons, verbatim
    ttft_cdf_ms: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d


def summarize(records: Sequence[JobRecord], *, cost_model: str, retractions: int,
              peak_queue: int, makespan: float, busy: float, in_system_s: float,
              slo_ttft_ms: float | None, slo_tpot_ms: float | None) -> TimedFigures:
    """The figures of a finished timed replay from its per-request records."""
    ran = [r for r in records if r.refused is None]
    refused = [r for r in records if r.refused is not None]
    ttft = np.array([r.ttft for r in ran], dtype=np.float64)
    tpots = [t for t in (r.tpot for r in ran) if t is not None]
    attained: float | None = None
    goodput: float | None = None
    if slo_ttft_ms is not None or slo_tpot_ms is not None:
        good = 0
        for r in ran:
            ok = slo_ttft_ms is None or r.ttft * 1e3 <= slo_ttft_ms
            tp = r.tpot
            if ok and slo_tpot_ms is not None and tp is not None:
                ok = tp * 1e3 <= slo_tpot_ms
            good += ok
        attained = good / len(records) if records else 0.0
        goodput = good / makespan if makespan > 0 else 0.0
    cdf = (np.percentile(ttft * 1e3, np.linspace(0, 100, CDF_POINTS)).tolist()
           if ttft.size else [])
    return TimedFigures(
        cost_model=cost_model,
        ttft_ms=Latency.of(ttft),
        queue_ms=Latency.of([r.queue for r in ran]),
        tpot_ms=Latency.of(tpots) if tpots else None,
        e2e_ms=Latency.of([r.e2e for r in ran]),
        finished=len(ran),
        refused=len(refused),
        retractions=retractions,
        peak_queue=peak_queue,
        makespan_s=makespan,
        busy_s=busy,
        mean_in_system=in_system_s / makespan if makespan > 0 else 0.0,
        throughput_rps=len(ran) / makespan if makespan > 0 else 0.0,
        output_tps=sum(r.output_tokens for r in ran) / makespan if makespan > 0 else 0.0,
        slo_ttft_ms=slo_ttft_ms,
        slo_tpot_ms=slo_tpot_ms,
        slo_attainment=attained,
        goodput_rps=goodput,
        refusals=[f"{r.rid}: {r.refused}" for r in refused[:5]],
        ttft_cdf_ms=cdf,
    )
