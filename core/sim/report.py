"""What ``simulate`` reports: the replays of one workload or a policy x workload matrix,
their references, recommendations and the JSON document, assembled in one place.

:class:`SimulateReport` holds what the command prints (the CLI renders its
tables from it) and :meth:`SimulateReport.to_json` is the ``--json``
document: one workload (``mode`` workload or trace) or a matrix (``mode``
matrix), with ``--oracle``'s bounds, ``--timing``'s spec and the host tier's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.bound import Bound
from radix_evict.sim.failures import RunFailure
from radix_evict.sim.recommend import RULE, Recommendation
from radix_evict.sim.results import MatrixResult, ReplayResult
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import OBJECTIVE_RULES
from radix_evict.sim.workloads import Workload

TIERS_WORKLOAD = "priority-tiers"


def timing_json(spec: TimingSpec, objective: str) -> dict[str, Any]:
    """The top-level keys --json adds for a timed replay."""
    return {"cost_model": spec.cost_model.describe(), "objective": objective,
            "objective_rule": OBJECTIVE_RULES[objective], "timing": spec.describe()}


def host_json(spec: HostTierSpec) -> dict[str, Any]:
    """The top-level key --json adds for a two-tier replay."""
    policy = spec.policy if isinstance(spec.policy, str) or spec.policy is None else "object"
    return {"host_tier": {"tokens": spec.tokens, "hicache_ratio": spec.ratio,
                          "write_policy": spec.write_policy,
                          "write_threshold": spec.threshold or None,
                          "host_policy": policy,
                          "admission": getattr(spec.admission, "name", spec.admission)}}


def add_bound_json(data: dict[str, Any], bounds: Sequence[Bound]) -> None:
    """--oracle in --json: gap_closed on every result, the oracle rows, the ceiling(s)."""
    by_name = {b.workload: b for b in bounds}
    beaten = {b.workload: [r["label"] for r in data["results"] if r["workload"] == b.workload
                           and r["hit_rate"] > b.oracle.hit_rate + 1e-12] for b in bounds}
    for r in data["results"]:
        r["gap_closed"] = by_name[r["workload"]].gap_closed(r["hit_rate"])
    for b in bounds:
        row = b.oracle.to_dict()
        row["gap_closed"] = b.gap_closed(b.oracle.hit_rate)
        data["results"].append(row)
    if data.get("mode") == "matrix":
        data["ceiling"] = {b.workload: b.ceiling.to_dict() for b in bounds}
        data["bounds"] = {b.workload: {**b.to_dict(), "beaten_by": beaten[b.workload]}
                          for b in bounds}
    else:
        (b,) = bounds
        data["ceiling"] = b.ceiling.to_dict()
        data["bound"] = {**b.to_dict(), "beaten_by": beaten[b.workload]}


@dataclass
class SimulateReport:
    """One simulate run's figures: ``matrix`` is None for one workload (or trace)."""

    workloads: list[Workload]
    policies: list[str]
    results: list[ReplayResult]
    recommendations: dict[str, Recommendation]
    seed: int
    page_size: int
    pool_tokens: int | None
    matrix: MatrixResult | None = None
    bounds: dict[str, Bound] = field(default_factory=dict)
    derived: dict[str, Any] = field(default_factory=dict)
    failures: list[RunFailure] = field(default_factory=list)
    timing: TimingSpec | None = None
    objective: str = "hit-rate"
    host: HostTierSpec | None = None
    wall_s: float = 0.0

    @property
    def names(self) -> list[str]:
        """The workloads with a recommendation, in order."""
        return list(self.recommendations)

    @property
    def tiers(self) -> list[ReplayResult]:
        """The priority-tiers workload's results (its own table and JSON key)."""
        return [r for r in self.results if r.workload == TIERS_WORKLOAD]

    def wall_note(self, single: bool) -> str:
        """How long the replays took (``single``: of one workload, its request count said)."""
        n = f" of {self.workloads[0].num_requests:,} requests" if single else ""
        return f"wall time {self.wall_s:.2f} s for {len(self.results)} replays{n}"

    def cells(self, workload: str) -> list[ReplayResult]:
        """One workload's results, in policy order."""
        if self.matrix is None:
            return list(self.results)
        return [self.matrix.cell(workload, p) for p in self.matrix.policies]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document, keys in the order simulate has always printed them."""
        data: dict[str, Any]
        if self.matrix is None:
            wl, results = self.workloads[0], self.results
            (rec,) = self.recommendations.values()
            pool = wl.default_pool_tokens if self.pool_tokens is None else self.pool_tokens
            data = {
                "mode": "trace" if wl.name.startswith("trace:") else "workload",
                "workload": results[0].workload_info if results else {},
                "seed": self.seed, "pool_tokens": results[0].pool_tokens if results else pool,
                "page_size": self.page_size, "policies": self.policies,
                "results": [r.to_dict() for r in results],
                "recommendation": rec.to_dict(), **self.derived, "wall_s": self.wall_s,
                "failures": [f.to_dict() for f in self.failures],
            }
            if wl.name == TIERS_WORKLOAD:
                data["tier_hit_rates"] = {r.label: r.tier_hit_rates for r in results}
        else:
            data = self.matrix.to_dict()
            data.update({"mode": "matrix", "seed": self.seed, "page_size": self.page_size,
                         "winners": dict(self.matrix.winners), "winner_rule": RULE,
                         "recommendations": {w: r.to_dict()
                                             for w, r in self.recommendations.items()},
                         **self.derived, "wall_s": self.wall_s,
                         "failures": [f.to_dict() for f in self.failures]})
            if self.tiers:
                data["tier_hit_rates"] = {r.label: r.tier_hit_rates for r in self.tiers}
        if self.bounds:
            add_bound_json(data, list(self.bounds.values()))
        if self.timing is not None:
            data.update(timing_json(self.timing, self.objective))
        if self.host is not None:
            data.update(host_json(self.host))
        return data
