"""``sweep --plot FILE``: hit rate over pool size, a line per policy, a panel per workload.

A timed sweep has a panel per workload and timing point, and a second row of
panels below: p99 TTFT over pool size, the same lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from radix_evict.sim.oracle import ORACLE
from radix_evict.sim.sweep.summary import Curve, config_text

from .plotting import pyplot

TITLE = "hit rate by pool size, each policy at its best config"


def plot_curves(path: Path, curves: Sequence[Curve], title: str,
                ceilings: Mapping[str, float] | None = None) -> None:
    """Each workload's hit-rate curves (pool tokens on a log axis), written to ``path``.

    The oracle, where the sweep ran it, is a dashed black line; the ceiling a dotted one.
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
        top = (ceilings or {}).get(workload)
        if top is not None:
            ax.axhline(100 * top, color="0.4", linestyle=":", label="ceiling (infinite pool)")
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
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _line(ax: Any, c: Curve, points: Sequence[tuple[int, float]],
          scale: float = 100.0) -> None:
    xs = [p for p, _ in points]
    ys = [scale * v for _, v in points]
    cfg = config_text(c.config)
    if c.policy == ORACLE:
        ax.plot(xs, ys, "k--", marker="x", label="oracle (Belady, offline)")
        return
    ax.plot(xs, ys, marker="o", label=c.policy if cfg == "-" else f"{c.policy} {cfg}")


def _axes(ax: Any, ylabel: str, title: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel("KV pool size (tokens)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
