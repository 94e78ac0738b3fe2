"""The capacity plan: the fewest replicas each setting needs to hold a TTFT percentile under an SLO.

Operators pay per GPU; the question a policy, a router or a host tier answers
for them is how many replicas it saves at their SLO on their traffic. For
each setting (policy x router x host tier), :func:`plan_capacity` runs a
:class:`~radix_evict.sim.fleet.plan_search.ReplicaSearch` (exponential
probe, then bisection), each probe a fleet replay of the whole workload at
its recorded arrival times (:class:`FleetProbe`). The searches advance in
rounds: each round runs the next probe of every unfinished setting, on
``jobs`` worker processes. The result (:class:`CapacityPlan`) holds each
setting's count and figures, the one-line answers
(:meth:`CapacityPlan.answers`), notes where probes contradict the monotone
assumption, and the table (:mod:`radix_evict.sim.fleet.plan_report`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.errors import RadixEvictError
from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.fleet.plan_search import Probe, ReplicaSearch
from radix_evict.sim.hybrid_replay import HybridSpec
from radix_evict.sim.sweep.host_axes import host_point_text
from radix_evict.sim.sweep.keys import canonical_json
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

__all__ = ["CapacityPlan", "FleetProbe", "PlanProbeError", "PlanSetting", "Probe", "ProbeFn",
           "SettingPlan", "plan_capacity", "probe_line", "probe_of"]

DEFAULT_MAX_REPLICAS = 256
DEFAULT_PERCENTILE = 99


class PlanProbeError(RadixEvictError):
    """A probe (one fleet replay) failed: names the setting, the replica count and why."""


@dataclass(frozen=True)
class PlanSetting:
    """One thing the plan sizes: a policy run behind a router, with or without a host tier."""

    run: PolicyRun
    router: str = "round_robin"
    router_config_json: str = "null"  # canonical JSON of the router's config (None: defaults)
    host: HostTierSpec | None = None

    @classmethod
    def of(cls, run: PolicyRun, router: str = "round_robin",
           router_config: Mapping[str, Any] | None = None,
           host: HostTierSpec | None = None) -> PlanSetting:
        return cls(run, router, canonical_json(None if router_config is None
                                               else dict(router_config)), host)

    @property
    def router_config(self) -> dict[str, Any] | None:
        value = json.loads(self.router_config_json)
        return None if value is None else dict(value)

    @property
    def router_label(self) -> str:
        cfg = "" if self.router_config_json == "null" else f" {self.router_config_json}"
        return f"{self.router}{cfg}"

    @property
    def host_label(self) -> str:
        return "none" if self.host is None else host_point_text(self.host)

    @property
    def label(self) -> str:
        """``tlru, cache_aware`` (and the host tier where there is one): how notes name it."""
        host = "" if self.host is None else f", {self.host_label}"
        return f"{self.run.name}, {self.router_label}{host}"


ProbeFn = Callable[[PlanSetting, int], Probe]
RoundFn = Callable[[Sequence[tuple[PlanSetting, int]]], list[Probe]]  # a round's probes, in order


def probe_of(result: Any, percentile: int) -> Probe:
    """A FleetResult's figures as the plan reads them: the TTFT percentile from its CDF
    (``ttft_cdf_ms[p]`` is exactly numpy's p-th percentile of the served requests)."""
    f = result.fleet
    cdf = f.ttft_cdf_ms
    ttft = float(cdf[percentile]) if cdf else math.inf  # nothing served: no SLO met
    return Probe(replicas=int(result.replicas), ttft_ms=ttft,
                 ttft_p99_ms=float(f.ttft_ms.p99) if cdf else math.inf,
                 hit_rate=float(result.hit_rate), gpu_hours=float(result.gpu_hours),
                 requests=int(f.finished + f.refused), refused=int(f.refused))


@dataclass(frozen=True)
class FleetProbe:
    """Probes as fleet replays of one workload at one pool, page size and timing (with
    ``hybrid``, a HybridSpec: each replica on that hybrid model's cache, ``sim.fleet.hybrid``)."""

    workload: Workload
    pool_tokens: int
    page_size: int
    timing: TimingSpec
    percentile: int = DEFAULT_PERCENTILE
    seed: int = 0
    hybrid: HybridSpec | None = None

    def __call__(self, setting: PlanSetting, replicas: int) -> Probe:
        from radix_evict.sim.fleet.hybrid import replay_hybrid_fleet
        from radix_evict.sim.fleet.replay import FleetSpec, replay_fleet

        fleet = FleetSpec(replicas=replicas, router=setting.router,
                          router_config=setting.router_config, seed=self.seed)
        if self.hybrid is not None:
            result = replay_hybrid_fleet(self.workload, setting.run, self.hybrid,
                                         timing=self.timing, fleet=fleet, host=setting.host)
        else:
            result = replay_fleet(self.workload, setting.run, pool_tokens=self.pool_tokens,
                                  page_size=self.page_size, timing=self.timing, fleet=fleet,
                                  host=setting.host)
        return probe_of(result, self.percentile)


@dataclass
class SettingPlan:
    """One setting's search: its count (None: none within the maximum) and its probes."""

    setting: PlanSetting
    replicas: int | None
    answer: Probe | None  # the probe at ``replicas``
    best: Probe | None  # the lowest TTFT percentile reached (what to say when none met)
    probes: list[Probe]  # in the order of N
    contradictions: list[tuple[Probe, Probe]] = field(default_factory=list)

    @property
    def shown(self) -> Probe | None:
        """The probe the table shows: the answer, else the best reached."""
        return self.answer if self.answer is not None else self.best

    def to_json(self) -> dict[str, Any]:
        s = self.setting
        return {
            "policy": s.run.name, "config": _config_json(s.run), "router": s.router,
            "router_config": s.router_config,
            "host": None if s.host is None else s.host_label,
            "replicas": self.replicas,
            "figures": None if self.shown is None else _json_probe(self.shown),
            "probes": [_json_probe(p) for p in self.probes],
            "contradictions": [[a.replicas, b.replicas] for a, b in self.contradictions],
        }


def _config_json(run: PolicyRun) -> Any:
    from radix_evict.sim.configs import config_dict

    return None if run.config is None else config_dict(run.config)


def _json_probe(p: Probe) -> dict[str, Any]:
    """A probe for JSON: an infinite TTFT (nothing served) is null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in p.to_json().items()}


@dataclass
class CapacityPlan:
    """Every setting's answer, and what the plan was asked."""

    slo_ttft_ms: float
    percentile: int
    max_replicas: int
    settings: list[SettingPlan]

    @property
    def slo_text(self) -> str:
        """``p99 TTFT <= 5.00 s``."""
        return f"p{self.percentile} TTFT <= {ms_text(self.slo_ttft_ms)}"

    def answers(self) -> list[str]:
        """The one-line answers (:mod:`radix_evict.sim.fleet.plan_answer`)."""
        from radix_evict.sim.fleet.plan_answer import answer_lines

        return answer_lines(self)

    def notes(self) -> list[str]:
        """Probes that contradict the monotone assumption, and refused requests."""
        out = []
        p = f"p{self.percentile}"
        for sp in self.settings:
            for small, big in sp.contradictions:
                out.append(f"{sp.setting.label}: not monotone: {p} TTFT "
                           f"{ms_text(small.ttft_ms)} at {small.replicas} replicas but "
                           f"{ms_text(big.ttft_ms)} at {big.replicas}; the count assumes more "
                           "replicas never hurt")
            refused = max((q.refused for q in sp.probes), default=0)
            if refused:
                out.append(f"{sp.setting.label}: up to {refused:,} requests refused (no pool "
                           "holds them); the percentile is over the requests served")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"slo_ttft_ms": self.slo_ttft_ms, "percentile": self.percentile,
                "max_replicas": self.max_replicas, "answers": self.answers(),
                "notes": self.notes(), "settings": [s.to_json() for s in self.settings]}


def probe_line(setting: PlanSetting, probe: Probe, slo_ttft_ms: float, percentile: int) -> str:
    """``probe lru, cache_aware: 8 replicas, p99 TTFT 8.90 s (meets)``: a probe as it finishes."""
    from radix_evict.sim.fleet.plan_answer import replicas_text

    ok = "meets" if probe.meets(slo_ttft_ms) else "misses"
    return (f"probe {setting.label}: {replicas_text(probe.replicas)}, p{percentile} TTFT "
            f"{ms_text(probe.ttft_ms)} ({ok})")


def ms_text(ms: float) -> str:
    """``4.81 s`` or ``820 ms``: how answers and notes write a latency."""
    if not math.isfinite(ms):
        return "none served"
    return f"{ms / 1e3:,.2f} s" if ms >= 1e3 else f"{ms:,.0f} ms"


def _run_round(asks: Sequence[tuple[PlanSetting, int]], probe: ProbeFn, jobs: int
               ) -> list[Probe]:
    """One probe per ask, in order; on worker processes when there are several and ``jobs`` > 1."""
    if jobs <= 1 or len(asks) <= 1:
        return [_probe_one(probe, s, n) for s, n in asks]
    from radix_evict.sim.parallel import JobFailed, stream_jobs

    jobs_ = [lambda _report, s=s, n=n: probe(s, n) for s, n in asks]
    out: dict[int, Probe] = {}
    for i, got in stream_jobs(jobs_, [1] * len(asks), jobs):
        if isinstance(got, JobFailed):
            s, n = asks[i]
            raise PlanProbeError(f"{s.label} at {n} replicas: {got.error}")
        out[i] = got
    return [out[i] for i in range(len(asks))]


def _probe_one(probe: ProbeFn, setting: PlanSetting, n: int) -> Probe:
    try:
        return probe(setting, n)
    except RadixEvictError:
        raise
    except Exception as exc:
        raise PlanProbeError(f"{setting.label} at {n} replicas: {type(exc).__name__}: "
                             f"{exc}") from exc


def plan_capacity(settings: Sequence[PlanSetting], probe: ProbeFn, *, slo_ttft_ms: float,
                  percentile: int = DEFAULT_PERCENTILE,
                  max_replicas: int = DEFAULT_MAX_REPLICAS, jobs: int = 1, start: int = 1,
                  on_probe: Callable[[PlanSetting, Probe], None] | None = None,
                  run_round: RoundFn | None = None) -> CapacityPlan:
    """Search every setting's replica count; ``probe(setting, n)`` replays the fleet of ``n``.

    A setting listed twice is searched once. ``on_probe`` hears each probe as
    it finishes (progress). ``run_round`` runs a round's probes (default: on
    ``jobs`` forked processes; the sweep's executors, local or Ray, with
    :mod:`radix_evict.sim.fleet.plan_cells`). Raises PlanProbeError when a probe fails.
    """
    if not 0 < percentile <= 100 or isinstance(percentile, bool):
        raise ValueError(f"percentile must be in 1..100, got {percentile}")
    if not slo_ttft_ms > 0:
        raise ValueError(f"slo_ttft_ms must be positive, got {slo_ttft_ms}")
    unique = list(dict.fromkeys(settings))
    searches = {s: ReplicaSearch(slo_ttft_ms, max_replicas, min(start, max_replicas))
                for s in unique}
    while True:
        asks = [(s, n) for s, search in searches.items() if (n := search.next()) is not None]
        if not asks:
            break
        probes = run_round(asks) if run_round is not None else _run_round(asks, probe, jobs)
        for (s, _), got in zip(asks, probes, strict=True):
            searches[s].record(got)
            if on_probe is not None:
                on_probe(s, got)
    return CapacityPlan(slo_ttft_ms, percentile, max_replicas, [
        SettingPlan(s, x.replicas, x.answer, x.best,
                    sorted(x.probes.values(), key=lambda p: p.replicas), x.contradictions())
        for s, x in searches.items()])
