"""``--plot FILE.png``: hit rate and tail uncached tokens per policy, and hit rate over time.

matplotlib is an optional dependency (``radix-evict[plot]``), imported late
and headless by :func:`radix_evict.cli.plotting.pyplot`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from radix_evict.outputs import OutputFile
from radix_evict.sim.bound import CEILING_NAME, Bound
from radix_evict.sim.replay import ReplayResult

from .plotting import pyplot, save_figure


def _grouped_bars(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float]],
                  ylabel: str) -> None:
    """Bars of every series side by side within each group."""
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=15)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def _timeline(ax: Any, results: Sequence[ReplayResult], title: str) -> None:
    """Windowed hit rate against requests replayed, one line per policy."""
    for r in results:
        xs = [p.requests for p in r.timeline]
        ys = [100 * p.hit_rate for p in r.timeline]
        ax.plot(xs, ys, label=r.label, linewidth=1.2)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("requests replayed")
    ax.set_ylabel("hit rate (%)")
    ax.grid(alpha=0.3)


def _reference_lines(ax: Any, bound: Bound | None, timeline: bool = False) -> None:
    """The oracle and the infinite-pool ceiling as horizontal lines (overall hit rates)."""
    if bound is None:
        return
    for value, name, style in ((bound.oracle.hit_rate, bound.oracle_name, "--"),
                               (bound.ceiling.hit_rate, CEILING_NAME, ":")):
        ax.axhline(100 * value, color="black", linestyle=style, linewidth=1,
                   label=f"{name}{' overall' if timeline else ''} {100 * value:.1f}%")


def _ttft_cdf(ax: Any, results: Sequence[ReplayResult], bound: Bound | None) -> None:
    """Share of requests with TTFT at most x, one line per policy (and the timed oracle)."""
    rows = list(results)
    if bound is not None and bound.oracle.timing is not None:
        rows.append(bound.oracle)
    for r in rows:
        cdf = r.timing.ttft_cdf_ms
        if not cdf:
            continue
        shares = [100 * i / (len(cdf) - 1) for i in range(len(cdf))]
        style = "--" if r is not results[-1] and r not in results else "-"
        ax.plot([max(x, 1e-3) for x in cdf], shares, style, label=r.label, linewidth=1.2)
    ax.set_xscale("log")
    ax.set_xlabel("TTFT (ms, virtual time)")
    ax.set_ylabel("requests (%)")
    ax.set_title("TTFT CDF (timed replay)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_single(path: OutputFile, results: Sequence[ReplayResult], title: str,
                bound: Bound | None = None) -> None:
    """One workload: hit rate, p50/p90/p99 uncached per policy, and hit rate over time.

    A timed replay adds a fourth panel: each policy's TTFT CDF.
    """
    plt = pyplot()
    timed = all(r.timing is not None for r in results)
    fig, axes = plt.subplots(1, 4 if timed else 3, figsize=(21 if timed else 16, 4.8))
    labels = [r.label for r in results]
    axes[0].bar(labels, [100 * r.hit_rate for r in results], color="tab:blue")
    axes[0].set_ylabel("token hit rate (%)")
    axes[0].set_title("hit rate per policy", fontsize=9)
    axes[0].grid(axis="y", alpha=0.3)
    _reference_lines(axes[0], bound)
    if bound is not None:
        axes[0].legend(fontsize=8)
    tails = {q: [getattr(r, f"{q}_uncached") for r in results] for q in ("p50", "p90", "p99")}
    _grouped_bars(axes[1], labels, tails, "uncached prefill tokens per request")
    axes[1].set_title("uncached tokens per request (p50/p90/p99)", fontsize=9)
    axes[1].legend(fontsize=8)
    _timeline(axes[2], results, "hit rate over time (window)")
    _reference_lines(axes[2], bound, timeline=True)
    axes[2].legend(fontsize=8)
    if timed:
        _ttft_cdf(axes[3], results, bound)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def plot_matrix(path: OutputFile, workloads: Sequence[str], policies: Sequence[str],
                results: Sequence[ReplayResult], winners: dict[str, str], title: str,
                bounds: Mapping[str, Bound] | None = None) -> None:
    """Policy x workload: hit rate and p99 uncached grouped by workload, and a timeline each."""
    plt = pyplot()
    cols = max(len(workloads), 2)
    fig = plt.figure(figsize=(4 * cols, 8.5))
    grid = fig.add_gridspec(2, cols)
    cell = {(r.workload, r.label): r for r in results}
    names = [f"{w}\n(winner: {winners.get(w, '?')})" for w in workloads]
    hit = {p: [100 * cell[(w, p)].hit_rate for w in workloads] for p in policies}
    p99 = {p: [cell[(w, p)].p99_uncached for w in workloads] for p in policies}
    half = cols // 2
    ax0 = fig.add_subplot(grid[0, :half])
    _grouped_bars(ax0, names, hit, "token hit rate (%)")
    bounds = bounds or {}
    for i, w in enumerate(workloads):  # each workload's bound over its own group of bars
        b = bounds.get(w)
        if b is not None:
            for value, style, name in ((b.oracle.hit_rate, "--", "oracle"),
                                       (b.ceiling.hit_rate, ":", "ceiling")):
                ax0.hlines(100 * value, i - 0.45, i + 0.45, colors="black", linestyles=style,
                           linewidth=1, label=name if i == 0 else None)
    ax0.set_title("hit rate", fontsize=9)
    ax0.legend(fontsize=8)
    ax1 = fig.add_subplot(grid[0, half:])
    _grouped_bars(ax1, names, p99, "p99 uncached tokens per request")
    ax1.set_title("p99 uncached prefill tokens", fontsize=9)
    for i, w in enumerate(workloads):
        ax = fig.add_subplot(grid[1, i])
        _timeline(ax, [cell[(w, p)] for p in policies], f"{w}: hit rate over time")
        _reference_lines(ax, bounds.get(w), timeline=True)
        if i == 0:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)
