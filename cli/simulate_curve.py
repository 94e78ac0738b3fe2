"""``simulate --pool-curve SIZES``: lru's hit rate at every pool size from one replay.

The figures are :func:`radix_evict.sim.pool_curve_runs.curve_with_references`'s
(the lru pool-size curve, docs/pool-curve.md); this module checks what the
option may go with, and prints the table, the JSON and the plot.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.outputs import OutputFile
from radix_evict.sim.bound import CEILING_NAME, oracle_name
from radix_evict.sim.curve import CURVE
from radix_evict.sim.pool_curve_runs import CURVE_POLICY, CurveRun, curve_with_references
from radix_evict.sim.sweep.values import SweepValueError, parse_counts
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

from . import output
from .errors import EXIT_USAGE, CliError
from .preflight import POOL_BYTES_PER_TOKEN, check_fits
from .simulate_report import curve_table

if TYPE_CHECKING:
    from .simulate_options import SimulateOptions

PoolCurveOpt = Annotated[str | None, typer.Option(
    "--pool-curve",
    help="lru's hit rate and uncached tails at many pool sizes from one replay (the "
         "inclusion property; docs/pool-curve.md): sizes as sweep's --pool-tokens takes "
         "them, e.g. 1M..16M*2 or 250K,1M,4M. lru only; not with --pool-tokens, --timing, a "
         "host tier, --model or --enable-metrics. --oracle adds the oracle (one replay per "
         "size) and the ceiling; --plot draws the curve.")]

OPTION = "--pool-curve"
WHY_LRU = ("the inclusion property (a larger pool holds everything a smaller one holds, so "
           "one replay's recency order gives every size) holds for lru only")


def curve_sizes(text: str, page_size: int) -> list[int]:
    """``--pool-curve``'s sizes (the sweep's own parser), each a whole page at least."""
    try:
        sizes = parse_counts(text, OPTION)
    except SweepValueError as exc:
        text = str(exc)
        raise CliError(text if text.startswith(OPTION) else f"{OPTION}: {text}",
                       EXIT_USAGE) from None
    if not sizes:
        raise CliError(f"{OPTION}: give at least one pool size", EXIT_USAGE)
    for s in sizes:
        if s < page_size:
            raise CliError(f"{OPTION}: a pool of {s:,} tokens holds no whole page of "
                           f"--page-size {page_size:,} tokens", EXIT_USAGE)
    check_fits(f"{OPTION} {max(sizes):,}", "a pool that size", max(sizes),
               POOL_BYTES_PER_TOKEN)
    return sizes


def refuse_with_curve(*, policies: Sequence[str], pool_tokens: int | None,
                      timing: TimingSpec | None, host: HostTierSpec | None,
                      model: str | None, metrics: Path | None, workloads: int) -> None:
    """What ``--pool-curve`` cannot go with, each refused saying why (exit 2)."""
    others = [p for p in dict.fromkeys(policies) if p != CURVE_POLICY]
    if others:
        raise CliError(f"{OPTION} computes lru only, not {', '.join(others)}: {WHY_LRU}; "
                       "for other policies run one replay per size: radix-evict sweep -p "
                       f"{','.join(others)} --pool-tokens SIZES", EXIT_USAGE)
    if pool_tokens is not None:
        raise CliError(f"give {OPTION} (many pool sizes) or --pool-tokens (one), not both",
                       EXIT_USAGE)
    if timing is not None:
        raise CliError(f"{OPTION} is the token replay's curve, not --timing's: in the timed "
                       "replay admission, batching and retraction depend on the pool size, so "
                       "each size needs its own timed replay (radix-evict sweep --timing "
                       "--pool-tokens SIZES)", EXIT_USAGE)
    if host is not None:
        raise CliError(f"{OPTION} has no host tier: HiCache's rules are not "
                       "inclusion-preserving (which pages the host holds depends on what the "
                       "device evicted at each size, and load-backs change device occupancy), "
                       "so each size needs its own replay (radix-evict sweep --host-tokens ... "
                       "--pool-tokens SIZES)", EXIT_USAGE)
    if model is not None:
        raise CliError(f"{OPTION} is a token replay; --model replays one pool through a real "
                       "decoder: give one", EXIT_USAGE)
    if metrics is not None:
        raise CliError(f"--enable-metrics writes one cache's counters; {OPTION} runs no cache "
                       "per size", EXIT_USAGE)
    if workloads != 1:
        raise CliError(f"{OPTION} replays one workload or one trace (no 'all' or 'A,B')",
                       EXIT_USAGE)


def run_pool_curve(wl: Workload, sizes: Sequence[int], o: SimulateOptions,
                   plot: OutputFile | None) -> None:
    """The curve (and the references), then the table or the JSON, and the plot."""
    page_size, oracle = o.page_size, o.oracle
    seeded = "" if wl.seed is None else f" (seed {wl.seed})"
    output.note(f"workload {wl.name}{seeded}: {wl.num_requests:,} requests; lru at "
                f"{len(set(sizes))} pool sizes from one replay (page {page_size})")
    if oracle:
        output.note(f"oracle: one Belady replay per pool size ({len(set(sizes))} replays; "
                    "it has no inclusion property to share) and the infinite-pool ceiling, "
                    "side by side with the curve's pass")
    t0 = time.perf_counter()

    def say(message: str) -> None:
        output.note(f"pool curve: {message}")

    with output.progress_bar(f"pool curve of {wl.name}", enabled=o.progress) as prog:
        run = curve_with_references(wl, sizes, page_size, oracle=oracle, workers=o.jobs,
                                    progress=prog)
    wall = time.perf_counter() - t0
    for p in run.curve.points:
        if p.source != CURVE:
            say(f"pool {p.pool_tokens:,}: {p.inexact}; replayed on its own")
        if p.failed:
            output.note(f"warning: pool {p.pool_tokens:,}: {p.failed:,} of {p.requests:,} "
                        "requests found no room even after eviction (pool too small?); "
                        "their prompts count as uncached")
    if plot is not None:
        plot_curve(plot, run, f"{wl.name}: lru hit rate by pool size (page {page_size})")
        output.note(f"wrote plot {plot.path}")
    if o.json_out:
        output.emit_json({"mode": "pool-curve", "seed": o.seed, **run.to_dict(),
                          "oracle": oracle, "total_wall_s": wall})
    else:
        output.stdout().print(curve_table(run, f"{wl.name}: lru by pool size"))
    done = sum(p.source == CURVE for p in run.curve.points)
    output.note(f"wall time {wall:.2f} s: {done} of {len(run.curve.points)} sizes from one "
                f"pass ({run.curve.pass_s:.2f} s), {len(run.curve.points) - done} replayed "
                f"on their own ({run.curve.replay_s:.2f} s)"
                + ("; oracle and ceiling alongside" if oracle else ""))


def plot_curve(path: OutputFile, run: CurveRun, title: str) -> None:
    """Hit rate over pool size (log axis): lru, and with --oracle the oracle and ceiling."""
    from .plotting import pyplot, save_figure

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
