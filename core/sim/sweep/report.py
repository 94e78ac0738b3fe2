"""What a finished sweep reports: the data behind its tables, its JSON and its plot.

:func:`sweep_report` reads the rows once (summary, best config per policy,
hit-rate curves over pool sizes and over host sizes, each panel's ceiling)
and says which curve tables and host panels have something to show; the
command line only renders them (``cli/sweep_report.py``, ``cli/sweep_plot.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from radix_evict.sim.sweep.run import SweepOutcome, SweepPlan
from radix_evict.sim.sweep.summary import (
    ConfigScore,
    Curve,
    HostCurve,
    best_configs,
    curves,
    host_curves,
    host_point_label,
    point_ceilings,
    point_label,
    summary_dict,
    workload_label,
)
from radix_evict.sim.winner import OBJECTIVE_RULES

Row = dict[str, Any]
Ceilings = dict[tuple[str, str | None], float]


@dataclass(frozen=True)
class CurvePanel:
    """One pool-size curve table: a workload at a timing point and host point."""

    workload: str
    point: str | None
    host: str | None
    ceiling: float | None


@dataclass(frozen=True)
class HostPanel:
    """One host-size table (plot panel): a workload, timing point, pool and page size."""

    curves: list[HostCurve]
    ceiling: float | None


@dataclass(frozen=True)
class SweepReport:
    """A sweep's rows read for people and machines, under ``objective``."""

    rows: list[Row]
    objective: str
    summary: dict[str, Any]
    best: list[ConfigScore]
    curves: list[Curve]
    host_curves: list[HostCurve]
    ceilings: Ceilings

    def curve_panels(self) -> list[CurvePanel]:
        """The (workload, timing point, host point) groups whose curves have two points or more."""
        groups = dict.fromkeys((workload_label(r), point_label(r), host_point_label(r))
                               for r in self.rows if r.get("policy") != "ceiling")
        return [CurvePanel(w, p, h, self.ceilings.get((w, p))) for w, p, h in groups
                if any(c.workload == w and c.point == p and c.host == h and len(c.points) > 1
                       for c in self.curves)]

    def host_panels(self, every: bool = False) -> list[HostPanel]:
        """The host curves by (workload, timing point, pool, page), the panels with two host
        sizes or more (``every``: all of them)."""
        by: dict[tuple[Any, ...], list[HostCurve]] = {}
        for c in self.host_curves:
            by.setdefault((c.workload, c.point, c.pool_tokens, c.page_size), []).append(c)
        return [HostPanel(mine, self.ceilings.get((w, p))) for (w, p, _, _), mine in by.items()
                if every or any(len(c.points) > 1 for c in mine)]

    def to_dict(self, plan: SweepPlan, outcome: SweepOutcome, wall: float) -> dict[str, Any]:
        """``sweep --json``: the counts, every row, the summary (and the objective, timed)."""
        data: dict[str, Any] = {
            "cells": len(plan.cells), "ran": outcome.ran, "kept": len(plan.kept),
            "failed": len(outcome.failed), "interrupted": outcome.interrupted,
            "rows": self.rows, "summary": self.summary, "wall_s": wall,
        }
        if plan.timed:
            data.update({"objective": self.objective,
                         "objective_rule": OBJECTIVE_RULES[self.objective]})
        return data


def sweep_report(rows: list[Row], objective: str) -> SweepReport:
    """Read ``rows`` under ``objective`` (ObjectiveError for one the rows cannot rank by)."""
    return SweepReport(rows, objective, summary_dict(rows, objective),
                       best_configs(rows, objective), curves(rows, objective),
                       host_curves(rows, objective), point_ceilings(rows))


def failed_cell_text(row: Row) -> str:
    """How a failed cell is named as it finishes: policy, config, pool, workload, point."""
    point = ", ".join(x for x in (point_label(row), host_point_label(row)) if x)
    at = f" ({point})" if point else ""
    return (f"cell failed: {row['policy']} {row.get('config') or ''} "
            f"pool {row.get('pool_tokens')} {row['workload']}{at}: {row.get('error')}")
