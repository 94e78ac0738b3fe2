"""``simulate --replicas --plot``: each replica's load per policy, and the fleet's TTFT CDFs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from radix_evict.outputs import OutputFile
from radix_evict.sim.draw import pyplot, save_figure
from radix_evict.sim.fleet.figures import FleetResult

__all__ = ["plot_fleet"]


def plot_fleet(path: OutputFile, results: Sequence[FleetResult], title: str) -> None:
    """Left: requests and prompt tokens per replica (bars, one group per policy); right: the
    fleet's TTFT CDF per policy and router."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(18, 4.8))
    n = results[0].replicas
    x = np.arange(n)
    width = 0.8 / len(results)
    for k, r in enumerate(results):
        reqs = [p.requests for p in r.per_replica]
        toks = [p.prompt_tokens / 1e3 for p in r.per_replica]
        axes[0].bar(x + k * width, reqs, width, label=r.policy)
        axes[1].bar(x + k * width, toks, width, label=r.policy)
    for ax, what in ((axes[0], "requests"), (axes[1], "prompt tokens (thousands)")):
        ax.set_xlabel("replica")
        ax.set_ylabel(what)
        ax.set_title(f"{what} per replica", fontsize=9)
        ax.set_xticks(x + width * (len(results) - 1) / 2, [str(i) for i in range(n)],
                      fontsize=7 if n > 16 else 9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    for r in results:
        cdf = r.fleet.ttft_cdf_ms
        if cdf:
            axes[2].plot(cdf, np.linspace(0, 100, len(cdf)), label=f"{r.policy} / {r.router}",
                         linewidth=1.2)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("TTFT (ms, virtual time)")
    axes[2].set_ylabel("requests (%)")
    axes[2].set_title("fleet TTFT CDF", fontsize=9)
    axes[2].grid(alpha=0.3)
    axes[2].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
