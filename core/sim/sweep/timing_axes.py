"""A timed grid's axes: max running requests, arrival rate and cost model.

A timed grid (``Grid.timing``, :class:`TimingAxes`) replays every cell
through the timed replay (:mod:`radix_evict.sim.timed`) and adds three axes:
max running requests, arrival rate and cost model, expanded between the seed
and the policy (cost model, max running, rate). Each cell carries its
:class:`TimingPoint`, and its key gains a ``timing`` entry (the point, the
cost model's name and coefficients, and the options shared by every cell);
an untimed cell's key is what it always was. A timed grid's ceiling is the
timed replay's (the same arrivals and scheduler with a pool that never
fills: a running request's prompt is visible once prefilled, so timed hit
rates can pass the token replay's ceiling): one cell per timing point too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from radix_evict.sim.sweep.keys import canonical_json, cost_model_key
from radix_evict.sim.sweep.keys import key_number as _num
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModel
from radix_evict.sim.timed.scheduler import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec

__all__ = ["TimingAxes", "TimingPoint", "timing_label"]

_DEFAULT_CHUNK = SchedulerSpec().chunked_prefill_size


@dataclass(frozen=True, eq=False)
class TimingPoint:
    """One timed cell's timing: its point on the timing axes and the options every cell shares.

    ``max_running`` None is SGLang's default for the cell's pool; ``rate`` None
    replays the workload's own arrival times (or, with ``concurrency``, a
    closed loop). Two points are equal when their :meth:`key` is.
    """

    max_running: int | None
    rate: float | None
    cost_model: CostModel
    concurrency: int | None = None
    time_scale: float = 1.0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    chunked_prefill_size: int = _DEFAULT_CHUNK

    def key(self) -> dict[str, Any]:
        """The ``timing`` entry of a timed cell's key (JSON types, numbers spelled one way)."""
        return {
            "max_running": self.max_running, "rate": _num(self.rate),
            "cost_model": cost_model_key(self.cost_model), "concurrency": self.concurrency,
            "time_scale": float(self.time_scale), "slo_ttft_ms": _num(self.slo_ttft_ms),
            "slo_tpot_ms": _num(self.slo_tpot_ms),
            "chunked_prefill_size": self.chunked_prefill_size,
        }

    @cached_property
    def key_json(self) -> str:
        """:meth:`key` as canonical JSON: the point's identity (computed once)."""
        return canonical_json(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimingPoint) and other.key_json == self.key_json

    def __hash__(self) -> int:
        return hash(self.key_json)

    def spec(self, seed: int | None) -> TimingSpec:
        """The TimingSpec a cell of workload seed ``seed`` replays with (arrivals seeded by it).

        Raises ValueError (from the timed replay's own checks) for values it refuses.
        """
        sched: dict[str, Any] = {"chunked_prefill_size": self.chunked_prefill_size}
        if self.max_running is not None:
            sched["max_running"] = self.max_running
        return TimingSpec(
            cost_model=self.cost_model,
            arrivals=ArrivalSpec(rate=_num(self.rate), concurrency=self.concurrency,
                                 time_scale=float(self.time_scale), seed=seed or 0),
            scheduler=SchedulerSpec(**sched),
            slo_ttft_ms=_num(self.slo_ttft_ms),
            slo_tpot_ms=_num(self.slo_tpot_ms),
        )

    @property
    def label(self) -> str:
        """``llama3-8b-h100, max running 64, rate 2/s``: the axes, as tables name a point."""
        return timing_label(self.cost_model.name, self.max_running, self.rate)


def timing_label(cost_model: str, max_running: int | None, rate: float | None) -> str:
    """How messages and tables name a timing point (the axes left at their default omitted)."""
    parts = [cost_model]
    if max_running is not None:
        parts.append(f"max running {max_running}")
    if rate is not None:
        parts.append(f"rate {rate:g}/s")
    return ", ".join(parts)


@dataclass(frozen=True)
class TimingAxes:
    """The timing axes of a timed grid, and the options every timed cell shares.

    ``max_running`` and ``rates`` hold None for "not varied" (SGLang's default;
    the workload's own arrivals). :meth:`points` lists them cost model first,
    then max running, then rate.
    """

    cost_models: tuple[CostModel, ...]
    max_running: tuple[int | None, ...] = (None,)
    rates: tuple[float | None, ...] = (None,)
    concurrency: int | None = None
    time_scale: float = 1.0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    chunked_prefill_size: int = _DEFAULT_CHUNK

    def points(self) -> list[TimingPoint]:
        """Every point in a fixed order, each once (``2`` and ``2.0`` are one rate)."""
        out: dict[TimingPoint, None] = {}
        for model in self.cost_models:
            for running in self.max_running:
                for rate in self.rates:
                    out.setdefault(TimingPoint(
                        running, rate, model, self.concurrency, self.time_scale,
                        self.slo_ttft_ms, self.slo_tpot_ms, self.chunked_prefill_size))
        return list(out)

    def count(self) -> int:
        """Points before duplicates are dropped (what the axes multiply to)."""
        return len(self.cost_models) * len(self.max_running) * len(self.rates)
