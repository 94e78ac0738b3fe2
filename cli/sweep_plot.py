"""``sweep --plot FILE``: hit rate over pool size, a line per policy, a panel per workload.

A timed sweep has a panel per workload and timing point, and a second row of
panels below: p99 TTFT over pool size, the same lines.

A sweep with a host tier draws :func:`plot_host_curves` instead: hit rate
over host tier size (0: none), a panel per workload, timing point and pool
size, a line per policy (a colour) and write policy (a line style); timed,
p99 TTFT below.

The references are named as :mod:`radix_evict.sim.bound` names them: the
oracle is ``oracle (offline bound)`` in the token replay and ``oracle
(Belady-guided)``, no bound, in a timed panel; the ceiling is each panel's
own (its workload and timing point).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from radix_evict.outputs import OutputFile
from radix_evict.sim.bound import CEILING_NAME, oracle_name
from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.sweep.summary import Curve, HostCurve, config_text

from .plotting import pyplot, save_figure

TITLE = "hit rate by pool size, each policy at its best config"
HOST_TITLE = "hit rate by host tier size, each policy at its best config"
STYLES = ("-", "--", "-.", ":")  # one per write policy (host line) in the host plot
Ceilings = Mapping[tuple[str, str | None], float]  # by workload and timing point (None: untimed)


def plot_curves(path: OutputFile, curves: Sequence[Curve], title: str,
                ceilings: Ceilings | None = None) -> None:
    """Each workload's hit-rate curves (pool tokens on a log axis), written to ``path``.

    The oracle, where the sweep ran it, is a dashed black line; the ceiling a dotted one
    (``ceilings`` by workload and timing point).
    """
    plt = pyplot()
    panels = list(dict.fromkeys((c.workload, c.point) for c in curves))
    timed = any(c.ttft_points for c in curves)
    n = max(1, len(panels))
    rows = 2 if timed else 1
    fig, axes = plt.subplots(rows, n, figsize=(6.4 * n, 4.4 * rows), squeeze=False)
    for i, (workload, point) in enumerate(panels):
        ax = axes[0][i]
        mine = [c for c in curves if c.workload == workload and c.point == point]
        for c in mine:
            _line(ax, c, c.points)
        top = (ceilings or {}).get((workload, point))
        if top is not None:
            ax.axhline(100 * top, color="0.4", linestyle=":", label=CEILING_NAME)
        _axes(ax, "token hit rate (%)",
              workload if point is None else f"{workload}\n{point}")
        ax.legend(fontsize=8, loc="lower right")
        if timed:
            low = axes[1][i]
            for c in mine:
                _line(low, c, c.ttft_points, scale=1.0)
            _axes(low, "p99 TTFT (ms, virtual time)", "")
            low.legend(fontsize=8, loc="upper right")
    fig.suptitle(title if not timed else f"{title}; below: p99 TTFT", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _line(ax: Any, c: Curve, points: Sequence[tuple[int, float]],
          scale: float = 100.0) -> None:
    xs = [p for p, _ in points]
    ys = [scale * v for _, v in points]
    cfg = config_text(c.config)
    if c.policy == ORACLE:
        ax.plot(xs, ys, "k--", marker="x", label=oracle_name(c.point is not None))
        return
    ax.plot(xs, ys, marker="o", label=c.policy if cfg == "-" else f"{c.policy} {cfg}")


def _axes(ax: Any, ylabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel("KV pool size (tokens)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)


def plot_host_curves(path: OutputFile, curves: Sequence[HostCurve], title: str,
                     ceilings: Ceilings | None = None) -> None:
    """Hit rate over host tier size, a panel per workload, timing point and pool size.

    A line per policy (its colour) and write policy (its line style); the
    ceiling (dotted; by workload and timing point): in the token replay its
    total bounds any host size's (:func:`radix_evict.sim.bound.ceiling_is`).
    Timed, a second row: p99 TTFT, the same lines.
    """
    plt = pyplot()
    panels = list(dict.fromkeys((c.workload, c.point, c.pool_tokens, c.page_size)
                                for c in curves))
    timed = any(c.ttft_points for c in curves)
    colours = {p: f"C{i % 10}" for i, p in enumerate(dict.fromkeys(c.policy for c in curves))}
    styles = {line: STYLES[i % len(STYLES)]
              for i, line in enumerate(dict.fromkeys(c.line for c in curves))}
    n = max(1, len(panels))
    rows = 2 if timed else 1
    fig, axes = plt.subplots(rows, n, figsize=(6.4 * n, 4.4 * rows), squeeze=False)
    for i, (workload, point, pool, page) in enumerate(panels):
        mine = [c for c in curves if (c.workload, c.point, c.pool_tokens, c.page_size)
                == (workload, point, pool, page)]
        ax = axes[0][i]
        for c in mine:
            _host_line(ax, c, c.points, colours[c.policy], styles[c.line], 100.0)
        top = (ceilings or {}).get((workload, point))
        if top is not None:
            ax.axhline(100 * top, color="0.4", linestyle=":", label=CEILING_NAME)
        where = "default pool" if pool is None else f"pool {pool:,} tokens"
        head = f"{workload}\n{where}, page {page}" + ("" if point is None else f"\n{point}")
        _host_axes(ax, "token hit rate (%)", head, mine)
        ax.legend(fontsize=8, loc="best")
        if timed:
            low = axes[1][i]
            for c in mine:
                _host_line(low, c, c.ttft_points, colours[c.policy], styles[c.line], 1.0)
            _host_axes(low, "p99 TTFT (ms, virtual time)", "", mine)
            low.legend(fontsize=8, loc="best")
    fig.suptitle(title if not timed else f"{title}; below: p99 TTFT", fontsize=11)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _host_line(ax: Any, c: HostCurve, points: Sequence[tuple[int, float]], colour: str,
               style: str, scale: float) -> None:
    xs = [h for h, _ in points]
    ys = [scale * v for _, v in points]
    ax.plot(xs, ys, color=colour, linestyle=style, marker="o", label=c.label)


def _host_axes(ax: Any, ylabel: str, title: str, curves: Sequence[HostCurve]) -> None:
    """Host sizes on a log axis; with a 0 (no host tier) a symlog one, linear below the
    smallest host tier."""
    sizes = sorted({h for c in curves for h, _ in c.points})
    positive = [h for h in sizes if h > 0]
    if positive and 0 in sizes:
        ax.set_xscale("symlog", linthresh=positive[0])
    elif positive:
        ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([_tokens(h) for h in sizes], fontsize=8)
    ax.set_xlabel("host tier size (tokens; 0 = no host tier)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)


def _tokens(n: int) -> str:
    """``0``, ``512K``, ``1M``, ``1.5M`` (999,936 is ``1M``): a tick label."""
    for unit, div in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= 0.9995 * div:
            return f"{n / div:.3g}{unit}"
    return str(n)
