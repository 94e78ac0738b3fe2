"""``--plot``: the figures ``simulate`` draws, with matplotlib, as core lays them out.

What each panel shows is :mod:`radix_evict.sim.plots`' (bars, lines,
reference levels and labels); this module draws it and writes the file by
:mod:`radix_evict.outputs`' rule, marked as radix-evict's so a rerun may
replace it. matplotlib is an optional dependency (``radix-evict[plot]``),
imported late and headless by :func:`pyplot`; without it a plot is an
:class:`~radix_evict.errors.OptionError` before any replay (:func:`check_plot`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from radix_evict.errors import OptionError
from radix_evict.outputs import Input, OutputFile, check_output, contains
from radix_evict.sim.bound import CEILING_NAME, Bound, oracle_name
from radix_evict.sim.curve import CURVE
from radix_evict.sim.plots import Level, Line, matrix_plot, single_plot
from radix_evict.sim.pool_curve_runs import CURVE_POLICY, CurveRun
from radix_evict.sim.report import SimulateReport
from radix_evict.sim.results import ReplayResult

__all__ = ["PLOT_MARKER", "PLOT_SUFFIXES", "check_plot", "plot_curve", "plot_matrix",
           "plot_report", "plot_single", "pyplot", "save_figure"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
# In every plot's metadata: how a rerun knows an existing plot file is one radix-evict drew.
PLOT_MARKER = "radix-evict --plot"
_MARKER_KEY = {".png": "Software", ".svg": "Creator", ".pdf": "Creator"}  # matplotlib's names


def pyplot(option: str = "--plot") -> Any:
    """pyplot on the Agg backend; an OptionError naming ``option`` when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise OptionError(f"{option} needs matplotlib: pip install 'radix-evict[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out: OutputFile, dpi: int) -> None:
    """Write ``fig`` to ``out`` by radix_evict.outputs' rule, marked as ours."""
    key = _MARKER_KEY[out.path.suffix.lower()]
    with out.writing() as tmp:
        fig.savefig(tmp, dpi=dpi, format=out.path.suffix.lower()[1:],
                    metadata={key: PLOT_MARKER})


def check_plot(path: Path | None, *, force: bool = False,
               inputs: Iterable[Input] = ()) -> OutputFile | None:
    """``--plot``: a name we can draw, a file we may write, and matplotlib installed."""
    if path is None:
        return None
    out = check_output(path, "--plot", "plot", contains(PLOT_MARKER.encode()), force=force,
                       inputs=inputs, suffixes=PLOT_SUFFIXES)
    pyplot()  # matplotlib missing: say so now, not after the replays
    return out


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


def _timeline(ax: Any, lines: Sequence[Line], title: str) -> None:
    for line in lines:
        ax.plot(line.xs, line.ys, label=line.label, linewidth=1.2)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("requests replayed")
    ax.set_ylabel("hit rate (%)")
    ax.grid(alpha=0.3)


def _levels(ax: Any, levels: Sequence[Level]) -> None:
    for level in levels:
        ax.axhline(level.y, color="black", linestyle=level.style, linewidth=1,
                   label=level.label)


def _ttft_cdf(ax: Any, lines: Sequence[Line]) -> None:
    for line in lines:
        ax.plot(line.xs, line.ys, line.style, label=line.label, linewidth=1.2)
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
    spec = single_plot(results, bound)
    timed = spec.ttft is not None
    fig, axes = plt.subplots(1, 4 if timed else 3, figsize=(21 if timed else 16, 4.8))
    axes[0].bar(spec.labels, spec.hit_rates, color="tab:blue")
    axes[0].set_ylabel("token hit rate (%)")
    axes[0].set_title("hit rate per policy", fontsize=9)
    axes[0].grid(axis="y", alpha=0.3)
    _levels(axes[0], spec.references)
    if spec.references:
        axes[0].legend(fontsize=8)
    _grouped_bars(axes[1], spec.labels, spec.tails, "uncached prefill tokens per request")
    axes[1].set_title("uncached tokens per request (p50/p90/p99)", fontsize=9)
    axes[1].legend(fontsize=8)
    _timeline(axes[2], spec.timeline, "hit rate over time (window)")
    _levels(axes[2], spec.timeline_references)
    axes[2].legend(fontsize=8)
    if spec.ttft is not None:
        _ttft_cdf(axes[3], spec.ttft)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def plot_matrix(path: OutputFile, workloads: Sequence[str], policies: Sequence[str],
                results: Sequence[ReplayResult], winners: dict[str, str], title: str,
                bounds: Mapping[str, Bound] | None = None) -> None:
    """Policy x workload: hit rate and p99 uncached grouped by workload, and a timeline each."""
    plt = pyplot()
    spec = matrix_plot(workloads, policies, results, winners, bounds)
    cols = max(len(workloads), 2)
    fig = plt.figure(figsize=(4 * cols, 8.5))
    grid = fig.add_gridspec(2, cols)
    half = cols // 2
    ax0 = fig.add_subplot(grid[0, :half])
    _grouped_bars(ax0, spec.groups, spec.hit, "token hit rate (%)")
    for s in spec.spans:
        ax0.hlines(s.level.y, s.index - 0.45, s.index + 0.45, colors="black",
                   linestyles=s.level.style, linewidth=1, label=s.level.label)
    ax0.set_title("hit rate", fontsize=9)
    ax0.legend(fontsize=8)
    ax1 = fig.add_subplot(grid[0, half:])
    _grouped_bars(ax1, spec.groups, spec.p99, "p99 uncached tokens per request")
    ax1.set_title("p99 uncached prefill tokens", fontsize=9)
    for i, panel in enumerate(spec.panels):
        ax = fig.add_subplot(grid[1, i])
        _timeline(ax, panel.lines, panel.title)
        _levels(ax, panel.references)
        if i == 0:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def plot_report(path: OutputFile, rep: SimulateReport) -> None:
    """``simulate --plot``: one workload's panels (:func:`plot_single`) or the matrix's
    (:func:`plot_matrix`), titled with what was replayed."""
    if rep.matrix is None:
        wl = rep.workloads[0]
        (rec,) = rep.recommendations.values()
        plot_single(path, rep.results, f"{wl.name}: pool {rep.results[0].pool_tokens:,} "
                    f"tokens, page {rep.page_size}; recommended: {rec.policy}",
                    rep.bounds.get(wl.name))
    else:
        plot_matrix(path, rep.names, rep.matrix.policies, rep.results,
                    dict(rep.matrix.winners),
                    f"policy x workload (page {rep.page_size}, seed {rep.seed})", rep.bounds)


def plot_curve(path: OutputFile, run: CurveRun, title: str) -> None:
    """Hit rate over pool size (log axis): lru, and with --oracle the oracle and ceiling."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    pts = run.curve.points
    xs = [p.pool_tokens for p in pts]
    ax.plot(xs, [100 * p.hit_rate for p in pts], marker="o", label=CURVE_POLICY)
    replayed = [p for p in pts if p.source != CURVE]
    if replayed:
        ax.plot([p.pool_tokens for p in replayed], [100 * p.hit_rate for p in replayed],
                linestyle="none", marker="o", markerfacecolor="white", color="C0",
                label="lru (its own replay)")
    if run.oracle is not None:
        ax.plot(xs, [100 * r.hit_rate for r in run.oracle], "k--", marker="x",
                label=oracle_name(False))
    if run.ceiling is not None:
        ax.axhline(100 * run.ceiling, color="0.4", linestyle=":", label=CEILING_NAME)
    if len(set(xs)) > 1:
        ax.set_xscale("log")
    ax.set_xlabel("KV pool size (tokens)")
    ax.set_ylabel("token hit rate (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
