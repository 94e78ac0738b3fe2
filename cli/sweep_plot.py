"""``sweep --plot FILE``: hit rate over pool size, a line per policy, a panel per workload."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from radix_evict.sim.sweep.summary import Curve, config_text

from .plotting import pyplot


def plot_curves(path: Path, curves: Sequence[Curve], title: str) -> None:
    """Each workload's hit-rate curves (pool tokens on a log axis), written to ``path``."""
    plt = pyplot()
    workloads = list(dict.fromkeys(c.workload for c in curves))
    n = max(1, len(workloads))
    fig, axes = plt.subplots(1, n, figsize=(6.4 * n, 4.4), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=False):
        for c in (c for c in curves if c.workload == workload):
            xs = [p for p, _ in c.points]
            ys = [100 * h for _, h in c.points]
            cfg = config_text(c.config)
            ax.plot(xs, ys, marker="o", label=c.policy if cfg == "-" else f"{c.policy} {cfg}")
        ax.set_xscale("log")
        ax.set_xlabel("KV pool size (tokens)")
        ax.set_ylabel("token hit rate (%)")
        ax.set_title(workload, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
