"""The data behind ``sweep --plot``: panels of lines, named and styled, ready to draw.

:func:`pool_plot`: hit rate over pool size, a line per policy (at its best
config), a panel per workload and timing point; timed, p99 TTFT below.
:func:`host_plot`: hit rate over host tier size (0: none), a panel per
workload, timing point and pool size, a line per policy (a colour) and write
policy (a line style). The references are named as :mod:`radix_evict.sim.bound`
names them: the oracle is ``oracle (offline bound)`` in the token replay and
``oracle (Belady-guided)``, no bound, in a timed panel; the ceiling is each
panel's own (its workload and timing point). The command line draws them
(``cli/sweep_plot.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from radix_evict.sim.bound import oracle_name
from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.sweep.summary import Curve, HostCurve, config_text

TITLE = "hit rate by pool size, each policy at its best config"
HOST_TITLE = "hit rate by host tier size, each policy at its best config"
STYLES = ("-", "--", "-.", ":")  # one per write policy (host line) in the host plot
Ceilings = Mapping[tuple[str, str | None], float]  # by workload and timing point (None: untimed)
Points = list[tuple[int, float]]


@dataclass(frozen=True)
class PlotLine:
    """One line: its label, hit rates (0..1) and p99 TTFTs (ms) by x; the oracle's is drawn
    dashed black, a host plot's in its policy's colour and write policy's style."""

    label: str
    points: Points
    ttft: Points
    oracle: bool = False
    colour: str | None = None
    style: str | None = None


@dataclass(frozen=True)
class PlotPanel:
    """One panel: its title, lines and ceiling; ``sizes`` are a host plot's x ticks (None:
    pool sizes on a log axis)."""

    title: str
    lines: list[PlotLine]
    ceiling: float | None
    sizes: list[int] | None = None


@dataclass(frozen=True)
class Plot:
    """A figure: its title, its panels, and whether a row of p99 TTFT panels goes below."""

    title: str
    panels: list[PlotPanel]
    timed: bool
    host: bool = False


def pool_line(c: Curve) -> PlotLine:
    """A pool-size curve as a line: the oracle named for its replay, a policy with its config."""
    if c.policy == ORACLE:
        return PlotLine(oracle_name(c.point is not None), list(c.points), list(c.ttft_points),
                        oracle=True)
    cfg = config_text(c.config)
    return PlotLine(c.policy if cfg == "-" else f"{c.policy} {cfg}", list(c.points),
                    list(c.ttft_points))


def pool_plot(curves: Sequence[Curve], title: str, ceilings: Ceilings | None = None) -> Plot:
    """Each workload's (and timing point's) hit-rate curves over pool size."""
    panels = []
    for workload, point in dict.fromkeys((c.workload, c.point) for c in curves):
        mine = [c for c in curves if c.workload == workload and c.point == point]
        panels.append(PlotPanel(workload if point is None else f"{workload}\n{point}",
                                [pool_line(c) for c in mine],
                                (ceilings or {}).get((workload, point))))
    return Plot(title, panels, any(c.ttft_points for c in curves))


def host_plot(curves: Sequence[HostCurve], title: str, ceilings: Ceilings | None = None) -> Plot:
    """Hit rate over host tier size, a panel per workload, timing point and pool size; in the
    token replay the ceiling's total bounds any host size's
    (:func:`radix_evict.sim.bound.ceiling_is`)."""
    colours = {p: f"C{i % 10}" for i, p in enumerate(dict.fromkeys(c.policy for c in curves))}
    styles = {line: STYLES[i % len(STYLES)]
              for i, line in enumerate(dict.fromkeys(c.line for c in curves))}
    panels = []
    for workload, point, pool, page in dict.fromkeys(
            (c.workload, c.point, c.pool_tokens, c.page_size) for c in curves):
        mine = [c for c in curves if (c.workload, c.point, c.pool_tokens, c.page_size)
                == (workload, point, pool, page)]
        where = "default pool" if pool is None else f"pool {pool:,} tokens"
        head = f"{workload}\n{where}, page {page}" + ("" if point is None else f"\n{point}")
        lines = [PlotLine(c.label, list(c.points), list(c.ttft_points),
                          colour=colours[c.policy], style=styles[c.line]) for c in mine]
        panels.append(PlotPanel(head, lines, (ceilings or {}).get((workload, point)),
                                sorted({h for c in mine for h, _ in c.points})))
    return Plot(title, panels, any(c.ttft_points for c in curves), host=True)


def tick_label(n: int) -> str:
    """``0``, ``512K``, ``1M``, ``1.5M`` (999,936 is ``1M``): a host size's tick label."""
    for unit, div in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= 0.9995 * div:
            return f"{n / div:.3g}{unit}"
    return str(n)
