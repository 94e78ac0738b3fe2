"""``sweep --plot FILE``: draws, with matplotlib, the panels :mod:`radix_evict.sim.sweep.plots`
lays out (hit rate over pool size, or over host tier size with a host tier; timed, p99 TTFT
below), written as :mod:`radix_evict.sim.draw` writes ``simulate``'s plots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radix_evict.outputs import OutputFile
from radix_evict.sim.bound import CEILING_NAME
from radix_evict.sim.draw import pyplot, save_figure
from radix_evict.sim.sweep.plots import (
    HOST_TITLE,
    TITLE,
    Ceilings,
    Plot,
    PlotLine,
    host_plot,
    pool_line,
    pool_plot,
    tick_label,
)
from radix_evict.sim.sweep.summary import Curve, HostCurve

__all__ = ["HOST_TITLE", "TITLE", "draw", "plot_curves", "plot_host_curves"]


def plot_curves(path: OutputFile, curves: Sequence[Curve], title: str,
                ceilings: Ceilings | None = None) -> None:
    """Each workload's hit-rate curves (pool tokens on a log axis), written to ``path``."""
    draw(path, pool_plot(curves, title, ceilings))


def plot_host_curves(path: OutputFile, curves: Sequence[HostCurve], title: str,
                     ceilings: Ceilings | None = None) -> None:
    """Hit rate over host tier size, a panel per workload, timing point and pool size."""
    draw(path, host_plot(curves, title, ceilings))


def draw(path: OutputFile, plot: Plot) -> None:
    """``plot`` written to ``path``: a row of hit-rate panels (the ceiling dotted), and timed
    a row of p99 TTFT panels below."""
    plt = pyplot()
    n = max(1, len(plot.panels))
    rows = 2 if plot.timed else 1
    top_loc, low_loc = ("best", "best") if plot.host else ("lower right", "upper right")
    fig, axes = plt.subplots(rows, n, figsize=(6.4 * n, 4.4 * rows), squeeze=False)
    for i, panel in enumerate(plot.panels):
        ax = axes[0][i]
        for line in panel.lines:
            _draw(ax, line, line.points, 100.0)
        if panel.ceiling is not None:
            ax.axhline(100 * panel.ceiling, color="0.4", linestyle=":", label=CEILING_NAME)
        _axes(ax, "token hit rate (%)", panel.title, panel.sizes)
        ax.legend(fontsize=8, loc=top_loc)
        if plot.timed:
            low = axes[1][i]
            for line in panel.lines:
                _draw(low, line, line.ttft, 1.0)
            _axes(low, "p99 TTFT (ms, virtual time)", "", panel.sizes)
            low.legend(fontsize=8, loc=low_loc)
    fig.suptitle(plot.title if not plot.timed else f"{plot.title}; below: p99 TTFT", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _line(ax: Any, c: Curve, points: Sequence[tuple[int, float]], scale: float = 100.0) -> None:
    """One pool-size curve's line (the oracle named for its replay)."""
    _draw(ax, pool_line(c), points, scale)


def _draw(ax: Any, line: PlotLine, points: Sequence[tuple[int, float]], scale: float) -> None:
    xs = [p for p, _ in points]
    ys = [scale * v for _, v in points]
    if line.oracle:
        ax.plot(xs, ys, "k--", marker="x", label=line.label)
    elif line.colour is None:
        ax.plot(xs, ys, marker="o", label=line.label)
    else:
        ax.plot(xs, ys, color=line.colour, linestyle=line.style, marker="o", label=line.label)


def _axes(ax: Any, ylabel: str, title: str, sizes: list[int] | None) -> None:
    """Pool sizes on a log axis; host sizes (``sizes``) as ticks on a log axis, or with a 0
    (no host tier) a symlog one, linear below the smallest host tier."""
    if sizes is None:
        ax.set_xscale("log")
        ax.set_xlabel("KV pool size (tokens)")
    else:
        positive = [h for h in sizes if h > 0]
        if positive and 0 in sizes:
            ax.set_xscale("symlog", linthresh=positive[0])
        elif positive:
            ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([tick_label(h) for h in sizes], fontsize=8)
        ax.set_xlabel("host tier size (tokens; 0 = no host tier)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
