"""What ``simulate --plot`` draws, laid out without matplotlib: the bars, lines, reference
lines and labels of each panel (``cli/simulate_plot.py`` draws them).

One workload (:func:`single_plot`): hit rate per policy with the oracle and
the ceiling as lines, p50/p90/p99 uncached per policy, hit rate over time,
and for a timed replay each policy's TTFT CDF. A matrix
(:func:`matrix_plot`): hit rate and p99 uncached grouped by workload, each
workload's references over its own bars, and a timeline per workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from radix_evict.sim.bound import CEILING_NAME, Bound
from radix_evict.sim.results import ReplayResult


@dataclass(frozen=True)
class Line:
    """A line through (xs, ys) with its legend label and matplotlib line style."""

    xs: list[float]
    ys: list[float]
    label: str
    style: str = "-"


@dataclass(frozen=True)
class Level:
    """A horizontal reference line at ``y`` (percent) with its style and legend label."""

    y: float
    style: str
    label: str | None


def timeline(results: Sequence[ReplayResult]) -> list[Line]:
    """Windowed hit rate (%) against requests replayed, one line per policy."""
    return [Line([p.requests for p in r.timeline], [100 * p.hit_rate for p in r.timeline],
                 r.label) for r in results]


def references(bound: Bound | None, timeline: bool = False) -> list[Level]:
    """The oracle and the infinite-pool ceiling (overall hit rates) as levels."""
    if bound is None:
        return []
    return [Level(100 * value, style, f"{name}{' overall' if timeline else ''} {100 * value:.1f}%")
            for value, name, style in ((bound.oracle.hit_rate, bound.oracle_name, "--"),
                                       (bound.ceiling.hit_rate, CEILING_NAME, ":"))]


def ttft_cdf(results: Sequence[ReplayResult], bound: Bound | None) -> list[Line]:
    """Share of requests (%) with TTFT at most x ms, per policy and the timed oracle (dashed)."""
    rows = list(results)
    if bound is not None and bound.oracle.timing is not None:
        rows.append(bound.oracle)
    out = []
    for r in rows:
        cdf = r.timing.ttft_cdf_ms
        if not cdf:
            continue
        shares = [100 * i / (len(cdf) - 1) for i in range(len(cdf))]
        style = "--" if r is not results[-1] and r not in results else "-"
        out.append(Line([max(x, 1e-3) for x in cdf], shares, r.label, style))
    return out


@dataclass(frozen=True)
class SinglePlot:
    """One workload's panels: bars per policy, tails, timeline, and the TTFT CDF if timed."""

    labels: list[str]
    hit_rates: list[float]
    tails: dict[str, list[float]]
    references: list[Level]
    timeline: list[Line]
    timeline_references: list[Level]
    ttft: list[Line] | None


def single_plot(results: Sequence[ReplayResult], bound: Bound | None = None) -> SinglePlot:
    timed = all(r.timing is not None for r in results)
    return SinglePlot(
        labels=[r.label for r in results],
        hit_rates=[100 * r.hit_rate for r in results],
        tails={q: [getattr(r, f"{q}_uncached") for r in results] for q in ("p50", "p90", "p99")},
        references=references(bound),
        timeline=timeline(results),
        timeline_references=references(bound, timeline=True),
        ttft=ttft_cdf(results, bound) if timed else None,
    )


@dataclass(frozen=True)
class Span:
    """A reference line over one group of bars (group ``index``)."""

    index: int
    level: Level


@dataclass(frozen=True)
class WorkloadPanel:
    """One workload's timeline panel."""

    title: str
    lines: list[Line]
    references: list[Level]


@dataclass(frozen=True)
class MatrixPlot:
    """Policy x workload: grouped hit rates and p99 tails, references, a timeline each."""

    groups: list[str]
    hit: dict[str, list[float]]
    p99: dict[str, list[float]]
    spans: list[Span]
    panels: list[WorkloadPanel]


def matrix_plot(workloads: Sequence[str], policies: Sequence[str],
                results: Sequence[ReplayResult], winners: Mapping[str, str],
                bounds: Mapping[str, Bound] | None = None) -> MatrixPlot:
    cell = {(r.workload, r.label): r for r in results}
    bounds = bounds or {}
    spans = []
    for i, w in enumerate(workloads):  # each workload's bound over its own group of bars
        b = bounds.get(w)
        if b is not None:
            for value, style, name in ((b.oracle.hit_rate, "--", "oracle"),
                                       (b.ceiling.hit_rate, ":", "ceiling")):
                spans.append(Span(i, Level(100 * value, style, name if i == 0 else None)))
    return MatrixPlot(
        groups=[f"{w}\n(winner: {winners.get(w, '?')})" for w in workloads],
        hit={p: [100 * cell[(w, p)].hit_rate for w in workloads] for p in policies},
        p99={p: [cell[(w, p)].p99_uncached for w in workloads] for p in policies},
        spans=spans,
        panels=[WorkloadPanel(f"{w}: hit rate over time",
                              timeline([cell[(w, p)] for p in policies]),
                              references(bounds.get(w), timeline=True)) for w in workloads],
    )
