"""``sweep --plot FILE``: hit rate over pool size, a line per policy, a panel per workload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

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
    workloads = list(dict.fromkeys(c.workload for c in curves))
    n = max(1, len(workloads))
    fig, axes = plt.subplots(1, n, figsize=(6.4 * n, 4.4), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=False):
        for c in (c for c in curves if c.workload == workload):
            xs = [p for p, _ in c.points]
            ys = [100 * h for _, h in c.points]
            cfg = config_text(c.config)
            if c.policy == ORACLE:
                ax.plot(xs, ys, "k--", marker="x", label="oracle (Belady, offline)")
                continue
            ax.plot(xs, ys, marker="o", label=c.policy if cfg == "-" else f"{c.policy} {cfg}")
        top = (ceilings or {}).get(workload)
        if top is not None:
            ax.axhline(100 * top, color="0.4", linestyle=":", label="ceiling (infinite pool)")
        ax.set_xscale("log")
        ax.set_xlabel("KV pool size (tokens)")
        ax.set_ylabel("token hit rate (%)")
        ax.set_title(workload, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
