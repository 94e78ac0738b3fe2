"""What a fleet replay reports: the fleet's timed figures, each replica's, balance, GPU-hours.

The fleet's :class:`~radix_evict.sim.timed.figures.TimedFigures` are over
every request (percentiles, SLO attainment, goodput), its makespan the last
replica's end; ``busy_s`` and ``mean_in_system`` add the replicas'. Balance is
max over mean of the requests and of the prompt tokens each replica served
(1.0: even). GPU-hours are replicas x makespan / 3600: what the fleet costs
to hold for the trace, busy or not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.timed.figures import Latency, TimedFigures, summarize
from radix_evict.sim.timed.job import JobRecord
from radix_evict.sim.timed.server import Server
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

__all__ = ["Balance", "FleetResult", "ReplicaFigures", "fleet_result"]


@dataclass(frozen=True)
class ReplicaFigures:
    """One replica's share of the work and how it fared."""

    index: int
    requests: int
    refused: int
    prompt_tokens: int
    hit_tokens: int
    hit_rate: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    queue_p99_ms: float
    retractions: int
    evicted_tokens: int
    busy_s: float
    end_s: float  # its last step's end


@dataclass(frozen=True)
class Balance:
    """Max over mean per replica (1.0 is even; N means one replica took everything)."""

    requests_max_over_mean: float
    tokens_max_over_mean: float


@dataclass
class FleetResult:
    """A fleet replay's figures; :meth:`to_json` gives plain JSON types."""

    workload: str
    policy: str
    policy_config: dict[str, Any] | None  # what each replica's policy ran with (None: none)
    config_source: str  # as a ReplayResult's (sim.configs: given, derived, none)
    router: str
    router_config: dict[str, Any]
    replicas: int
    pool_tokens: int  # per replica
    page_size: int
    requests: int
    prompt_tokens: int
    hit_tokens: int
    hit_rate: float  # a hybrid model's: the reusable hit rate (every component present)
    fleet: TimedFigures
    per_replica: list[ReplicaFigures]
    balance: Balance
    gpu_hours: float
    cpu_s: float  # the replay's CPU time (set-up included), router's included
    route_s: float  # of which in the router
    wall_s: float
    records: list[JobRecord] = field(default_factory=list, repr=False)  # every request's
    full_hit_rate: float | None = None  # a hybrid model's: what full-attention KV alone covered

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "records"}
        d["fleet"] = self.fleet.to_dict()
        return d


def _max_over_mean(values: Sequence[int]) -> float:
    mean = sum(values) / len(values) if values else 0.0
    return max(values) / mean if mean > 0 else 1.0


def _replica(r: Server, index: int) -> ReplicaFigures:
    ran = [x for x in r.records if x.refused is None]
    ttft = Latency.of([x.ttft for x in ran])
    t = r.tally
    return ReplicaFigures(
        index=index, requests=len(r.records), refused=len(r.records) - len(ran),
        prompt_tokens=t.prompts, hit_tokens=t.hits,
        hit_rate=t.hits / t.prompts if t.prompts else 0.0,
        ttft_p50_ms=ttft.p50, ttft_p99_ms=ttft.p99,
        queue_p99_ms=Latency.of([x.queue for x in ran]).p99,
        retractions=r.retractions, evicted_tokens=t.evicted, busy_s=r.busy_s, end_s=r.now)


def merged_records(servers: Sequence[Server]) -> list[JobRecord]:
    """Every replica's records, in finish order (a single server's own order for one)."""
    if len(servers) == 1:
        return list(servers[0].records)
    recs = [rec for s in servers for rec in s.records]
    order = np.argsort(np.array([rec.finish for rec in recs]), kind="stable")
    return [recs[i] for i in order]


def fleet_result(workload: Workload, run: PolicyRun, spec: Any, timing: TimingSpec,
                 replicas: Any, servers: Sequence[Server], *, cpu_s: float,
                 wall_s: float, route_s: float) -> FleetResult:
    """The figures of a finished fleet replay (``spec``: its FleetSpec; ``replicas``: the
    ReplicaMaker that built them)."""
    records = merged_records(servers)
    makespan = max((s.now for s in servers), default=0.0)
    figures = summarize(
        records, cost_model=timing.cost_model.name,
        retractions=sum(s.retractions for s in servers),
        peak_queue=max((s.peak_queue for s in servers), default=0), makespan=makespan,
        busy=math.fsum(s.busy_s for s in servers),  # one replica's: its own, exactly
        in_system_s=math.fsum(s.in_system_s for s in servers),
        slo_ttft_ms=timing.slo_ttft_ms, slo_tpot_ms=timing.slo_tpot_ms)
    per = [_replica(s, i) for i, s in enumerate(servers)]
    prompts = sum(p.prompt_tokens for p in per)
    hits = sum(p.hit_tokens for p in per)
    full = replicas.full_hit_tokens()
    rc = replicas.run_config
    return FleetResult(
        workload=workload.name, policy=run.name,
        policy_config=rc.as_dict(), config_source=rc.source,
        router=spec.router,
        router_config=dict(spec.router_config or {}), replicas=len(servers),
        pool_tokens=replicas.pool_size, page_size=replicas.page_size,
        requests=len(records), prompt_tokens=prompts, hit_tokens=hits,
        hit_rate=hits / prompts if prompts else 0.0, fleet=figures, per_replica=per,
        balance=Balance(_max_over_mean([p.requests for p in per]),
                        _max_over_mean([p.prompt_tokens for p in per])),
        gpu_hours=len(servers) * makespan / 3600, cpu_s=cpu_s, route_s=route_s,
        wall_s=wall_s, records=records,
        full_hit_rate=None if full is None else full / prompts if prompts else 0.0)
