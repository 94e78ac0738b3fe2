"""``radix-evict simulate``: which policy should I run? Replays and a recommendation.

Modes: one workload (the default ``chat``, ``--workload NAME`` or ``--trace
FILE``), a policy x workload matrix (``--workload all`` or ``A,B``), and
``--model tiny`` (real K/V, measured TTFT). The replays are core/replay.py's,
called once per policy with nothing added per request; the CLI only
validates first, times the whole run and reports.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from radix_evict.sim.bound import Bound
from radix_evict.sim.configs import describe_workload
from radix_evict.sim.failures import RunFailure
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.runs import PolicyRun, policy_matrix, replay_policies
from radix_evict.sim.winner import NothingServedError
from radix_evict.sim.workloads import DEFAULT_WORKLOAD, Workload, workload_names

from . import output, simulate_failures
from .errors import EXIT_INVALID, EXIT_USAGE, CliError, mark_json
from .options import parse_params
from .preflight import check_output, check_params, check_plot, check_pool, check_workload_pools
from .simulate_derived import derived_notes
from .simulate_recommend import RULE, Recommendation, recommend
from .simulate_report import (
    TIERS_WORKLOAD,
    add_bound_json,
    engine_table,
    hit_rate_pivot,
    matrix_table,
    policy_table,
    tier_table,
)
from .simulate_setup import ALL, build_runs, build_trace, build_workloads, params_for, workload_list


def _warn_failed(results: Sequence[ReplayResult]) -> None:
    for r in results:
        if r.failed:
            output.note(f"warning: {r.workload} / {r.label}: {r.failed:,} of {r.requests:,} "
                        "requests found no room even after eviction (pool too small?); "
                        "their prompts count as uncached")


NOTHING_SERVED = ("no replay served a request: every request found no room in the pool even "
                  "after eviction, so there is nothing to compare and no policy to recommend; "
                  "give a larger --pool-tokens")


def _recommend(results: Sequence[Any]) -> Recommendation:
    """The core's winner, explained; a refusal (exit 1) when no replay served a request."""
    try:
        return recommend(results)
    except NothingServedError:
        raise CliError(NOTHING_SERVED, EXIT_INVALID) from None


def _print_recommendation(rec: Recommendation, prefix: str = "") -> None:
    output.stdout().print(f"{prefix}Recommendation: run {rec.policy}: {rec.reason}.",
                          markup=False, highlight=False)


def _write_extras(plot: Path | None, metrics: Path | None, draw: Any,
                  results: Sequence[ReplayResult]) -> None:
    """The optional PNG and Prometheus files, each announced on stderr."""
    if plot is not None:
        draw()
        output.note(f"wrote plot {plot}")
    if metrics is not None:
        from .simulate_metrics import write_metrics

        write_metrics(metrics, results)
        output.note(f"wrote metrics {metrics}")


def _bounds(wls: Sequence[Workload], results: Sequence[ReplayResult], *,
            pool_tokens: int | None, page_size: int, progress: bool,
            jobs: int | None) -> dict[str, Bound]:
    """--oracle: the offline bound and infinite-pool ceiling of every workload."""
    from radix_evict.sim.bound import compute_bounds

    with output.progress_bar("oracle and ceiling", enabled=progress) as prog:
        return compute_bounds(wls, results, pool_tokens=pool_tokens, page_size=page_size,
                              progress=prog, workers=jobs)


def _run_single(wl: Workload, runs: list[PolicyRun], *, pool_tokens: int | None,
                page_size: int, seed: int, json_out: bool, plot: Path | None,
                metrics: Path | None, progress: bool, jobs: int | None,
                oracle: bool = False, verbose: bool = False) -> None:
    """One workload (or trace): a table per policy and a recommendation."""
    pool = wl.default_pool_tokens if pool_tokens is None else pool_tokens
    output.note(f"workload {wl.name} (seed {wl.seed}): {wl.num_requests:,} requests; "
                f"pool {pool:,} tokens, page {page_size}; policies "
                f"{', '.join(r.name for r in runs)}")
    derived = derived_notes([wl], runs)
    t0 = time.perf_counter()
    failures: list[RunFailure] = []
    with output.progress_bar(f"replaying {wl.name}", enabled=progress) as prog:
        results = replay_policies(wl, runs, pool_tokens=pool_tokens, page_size=page_size,
                                  progress=prog, workers=jobs, failures=failures)
    if not results:
        raise simulate_failures.all_failed(failures)
    bound = None
    if oracle:
        bound = _bounds([wl], results, pool_tokens=pool_tokens, page_size=page_size,
                        progress=progress, jobs=jobs)[wl.name]
    wall = time.perf_counter() - t0
    _warn_failed(results)
    rec = _recommend(results)

    def draw() -> None:
        from .simulate_plot import plot_single

        assert plot is not None
        plot_single(plot, results, f"{wl.name}: pool {results[0].pool_tokens:,} tokens, "
                                   f"page {page_size}; recommended: {rec.policy}", bound)

    # Files first: if one fails, stdout has not yet had its one JSON document.
    _write_extras(plot, metrics, draw, results)
    if json_out:
        data: dict[str, Any] = {
            "mode": "trace" if wl.name.startswith("trace:") else "workload",
            "workload": results[0].workload_info if results else {},
            "seed": seed, "pool_tokens": results[0].pool_tokens if results else pool,
            "page_size": page_size, "policies": [r.name for r in runs],
            "results": [r.to_dict() for r in results],
            "recommendation": rec.to_dict(), **derived, "wall_s": wall,
            "failures": [f.to_dict() for f in failures],
        }
        if wl.name == TIERS_WORKLOAD:
            data["tier_hit_rates"] = {r.label: r.tier_hit_rates for r in results}
        if bound is not None:
            add_bound_json(data, [bound])
        output.emit_json(data)
    else:
        out = output.stdout()
        out.print(policy_table(results, rec.policy, f"{wl.name}: {len(results)} policies",
                               bound))
        if wl.name == TIERS_WORKLOAD:
            out.print(tier_table(results, "hit rate per priority tier"))
        _print_recommendation(rec)
    output.note(f"wall time {wall:.2f} s for {len(results)} replays of "
                f"{wl.num_requests:,} requests")
    simulate_failures.finish(failures, verbose)


def _run_matrix(wls: list[Workload], runs: list[PolicyRun], *, pool_tokens: int | None,
                page_size: int, seed: int, json_out: bool, plot: Path | None,
                metrics: Path | None, progress: bool, jobs: int | None,
                oracle: bool = False, verbose: bool = False) -> None:
    """Several workloads: policy x workload matrix with a winner per workload."""
    output.note(f"{len(wls)} workloads x {len(runs)} policies: "
                f"{sum(w.num_requests for w in wls) * len(runs):,} request replays")
    derived = derived_notes(wls, runs)
    t0 = time.perf_counter()
    failures: list[RunFailure] = []
    with output.progress_bar("policy x workload", enabled=progress) as prog:
        m = policy_matrix(wls, runs, seed=seed, pool_tokens=pool_tokens, page_size=page_size,
                          progress=prog, workers=jobs, failures=failures)
    if not m.results:
        raise simulate_failures.all_failed(failures)
    bounds: dict[str, Bound] = {}
    if oracle:
        bounds = _bounds(wls, m.results, pool_tokens=pool_tokens, page_size=page_size,
                         progress=progress, jobs=jobs)
    wall = time.perf_counter() - t0
    _warn_failed(m.results)
    names = [w.name for w in wls if w.name in m.winners]  # the core named each winner
    if not names:
        raise CliError(NOTHING_SERVED, EXIT_INVALID)
    recs = {w: recommend([r for r in m.results if r.workload == w],
                         (m.cell(w, m.winners[w]), m.tie_breaks.get(w, False))) for w in names}
    winners = dict(m.winners)
    tiers = [r for r in m.results if r.workload == TIERS_WORKLOAD]

    def draw() -> None:
        from .simulate_plot import plot_matrix

        assert plot is not None
        plot_matrix(plot, names, m.policies, m.results, winners,
                    f"policy x workload (page {page_size}, seed {seed})", bounds)

    _write_extras(plot, metrics, draw, m.results)  # before the one JSON document
    if json_out:
        data = m.to_dict()
        data.update({"mode": "matrix", "seed": seed, "page_size": page_size,
                     "winners": winners, "winner_rule": RULE,
                     "recommendations": {w: r.to_dict() for w, r in recs.items()},
                     **derived, "wall_s": wall,
                     "failures": [f.to_dict() for f in failures]})
        if tiers:
            data["tier_hit_rates"] = {r.label: r.tier_hit_rates for r in tiers}
        if bounds:
            add_bound_json(data, list(bounds.values()))
        output.emit_json(data)
    else:
        out = output.stdout()
        out.print(matrix_table(names, m.policies, m.results, winners, bounds))
        out.print(hit_rate_pivot(names, m.policies, m.results, winners, bounds))
        if tiers:
            out.print(tier_table(tiers, f"{TIERS_WORKLOAD}: hit rate per priority tier"))
        for w, rec in recs.items():
            _print_recommendation(rec, prefix=f"{w}: ")
    output.note(f"wall time {wall:.2f} s for {len(m.results)} replays")
    simulate_failures.finish(failures, verbose)


def _run_engine(setup: tuple[Workload, list[Any]], runs: list[PolicyRun], *,
                pool_tokens: int | None, page_size: int, seed: int, device: str,
                baseline: bool, json_out: bool, progress: bool) -> None:
    """--model tiny: real K/V through the tiny decoder, measured TTFT per policy."""
    from .simulate_engine import run_engine

    if _device_name(device) == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise CliError("--device cuda: no CUDA device is available (use --device cpu)",
                           EXIT_USAGE)
    wl, requests = setup
    if not requests:
        raise CliError(f"{wl.name}: no request left to replay after shrinking", EXIT_USAGE)
    dev = None if device == "auto" else device
    output.note(f"model tiny on {_device_name(device)}: workload {wl.name} shrunk to "
                f"{len(requests)} requests")
    derived_notes([wl], runs)
    t0 = time.perf_counter()
    with output.progress_bar("engine replays", enabled=progress, delay_s=0.0) as prog:
        rows, pool = run_engine(wl, requests, runs, pool_tokens=pool_tokens,
                                page_size=page_size, device=dev, seed=seed, baseline=baseline,
                                progress=prog)
    wall = time.perf_counter() - t0
    cached = [r for r in rows if r.policy != "no-cache"]
    for r in rows:
        if r.result.dropped:
            output.note(f"warning: {wl.name} / {r.label}: {r.result.dropped:,} of "
                        f"{r.result.requests:,} requests found no room even after eviction "
                        "(pool too small?); they were dropped, not served")
    rec = _recommend(cached)
    if json_out:
        output.emit_json({
            "mode": "engine", "model": "tiny", "device": rows[0].result.device if rows else dev,
            "workload": describe_workload(wl), "requests": len(requests), "pool_tokens": pool,
            "page_size": page_size, "seed": seed, "rows": [r.to_dict() for r in rows],
            "recommendation": rec.to_dict(), "wall_s": wall,
        })
    else:
        dicts = [{**r.result.to_dict(), **r.to_dict()} for r in rows]
        title = (f"{wl.name} through the tiny decoder on {rows[0].result.device}: "
                 f"pool {pool:,} tokens")
        output.stdout().print(engine_table(dicts, rec.policy, title))
        _print_recommendation(rec)
    output.note(f"wall time {wall:.2f} s for {len(rows)} engine replays")


PolicyOpt = Annotated[list[str] | None, typer.Option(
    "--policy", "-p",
    help="Policy to replay (repeatable): one of {choices}. Default: the five public ones.")]
ConfigOpt = Annotated[list[str] | None, typer.Option(
    "--config", "-c",
    help="Policy config (repeatable): JSON for the --policy in the same position, or NAME=JSON, "
         "or @FILE. tlru without one gets a config derived from the workload.")]
WorkloadOpt = Annotated[str | None, typer.Option(
    "--workload", "-w",
    help=f"Built-in workload, 'A,B' or 'all' for a policy x workload matrix "
         f"(default {DEFAULT_WORKLOAD}; see --list-workloads).")]
ParamOpt = Annotated[list[str] | None, typer.Option(
    "--param", "-P",
    help="Workload parameter KEY=VALUE or WORKLOAD.KEY=VALUE (repeatable), e.g. convs=50.")]
TraceOpt = Annotated[Path | None, typer.Option(
    "--trace",
    help="JSONL trace: Mooncake (512-token blocks), Alibaba Bailian/Qwen (16-token blocks, "
         "linked turns) or ServeGen offline, detected from the first record (see "
         "--trace-format); default pool 4,000,000 tokens.")]
TraceFormatOpt = Annotated[str, typer.Option(
    "--trace-format",
    help="With --trace: 'auto' (detect from the first record) or an installed format: "
         "mooncake, bailian, servegen, or one a package adds (entry points "
         "radix_evict.trace_formats).")]
BlockSizeOpt = Annotated[int | None, typer.Option(
    "--block-size", min=1,
    help="With --trace: tokens per hash_id block (default: the format's; ServeGen needs it).")]
PoolOpt = Annotated[int | None, typer.Option(
    "--pool-tokens", min=1, help="KV pool size in tokens (default: the workload's).")]
PageOpt = Annotated[int, typer.Option("--page-size", min=1, help="Tokens per KV page.")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, help="Workload (and model) seed.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]
PlotOpt = Annotated[Path | None, typer.Option(
    "--plot",
    help="Write a PNG: hit rate and tail uncached tokens per policy, and hit rate over time.")]
MetricsOpt = Annotated[Path | None, typer.Option(
    "--enable-metrics", help="Write the cache counters in Prometheus text format.")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Replay through a real decoder with K/V in the pool: 'tiny'.")]
DeviceOpt = Annotated[str, typer.Option("--device", help="With --model: auto, cpu or cuda.")]
BaselineOpt = Annotated[bool, typer.Option(
    "--baseline/--no-baseline", help="With --model: also run without a cache.")]
ProgressOpt = Annotated[bool, typer.Option(
    "--progress/--no-progress", help="Progress bar on a terminal for runs over a second.")]
ListOpt = Annotated[bool, typer.Option(
    "--list-workloads", help="List the built-in workloads and their parameters.")]
OracleOpt = Annotated[bool, typer.Option(
    "--oracle",
    help="Also replay the offline bound (Belady: evict the leaf used again farthest in the "
         "future) and the infinite-pool ceiling; adds an 'oracle' row and each policy's share "
         "of the lru-to-oracle gap. A reference, not a policy you can run.")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1,
    help="Worker processes for the replays (default: planned from the cores; more processes "
         "than cores when that finishes sooner, e.g. 3 for 5 replays on 2 cores). "
         "The figures do not depend on it.")]


def simulate(
    ctx: typer.Context,
    policy: PolicyOpt = None,
    config: ConfigOpt = None,
    workload: WorkloadOpt = None,
    param: ParamOpt = None,
    trace: TraceOpt = None,
    trace_format: TraceFormatOpt = "auto",
    block_size: BlockSizeOpt = None,
    pool_tokens: PoolOpt = None,
    page_size: PageOpt = 1,
    seed: SeedOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    metrics: MetricsOpt = None,
    model: ModelOpt = None,
    device: DeviceOpt = "auto",
    baseline: BaselineOpt = True,
    progress: ProgressOpt = True,
    list_workloads: ListOpt = False,
    jobs: JobsOpt = None,
    oracle: OracleOpt = False,
) -> None:
    """Which policy should I run? Replay a workload under each policy and recommend one.

    With no arguments: the built-in chat workload (shared system prompts,
    growing conversations, priorities, agentic tool loops) under lru, lfu,
    slru, priority and tlru.
    """
    mark_json(ctx.obj, json_out)
    policy, config = policy or [], config or []
    if list_workloads:
        _list_workloads(json_out)
        return
    if trace is not None and workload is not None:
        raise CliError("give --trace or --workload, not both", EXIT_USAGE)
    if device not in ("auto", "cpu", "cuda"):
        raise CliError(f"--device {device!r}: use auto, cpu or cuda", EXIT_USAGE)
    check_plot(plot)
    check_output(metrics, "--enable-metrics")
    if trace is None and (trace_format != "auto" or block_size is not None):
        raise CliError("--trace-format and --block-size go with --trace", EXIT_USAGE)
    params = parse_params(param or [])
    check_params(params)
    check_pool(pool_tokens, page_size)
    name = workload or DEFAULT_WORKLOAD
    if model is not None:
        from .simulate_engine import MODELS

        if model not in MODELS:
            raise CliError(f"--model {model!r}: models: {', '.join(MODELS)}", EXIT_USAGE)
        if trace is None and len(workload_list(name)) != 1:
            raise CliError("--model tiny replays one workload or one trace (no 'all')",
                           EXIT_USAGE)
        if plot is not None or metrics is not None or oracle:
            raise CliError("--plot, --enable-metrics and --oracle are for token replays, "
                           "not --model", EXIT_USAGE)
        runs = build_runs(policy, config)
        from .simulate_engine import tiny_setup, tiny_trace_setup

        setup = (tiny_trace_setup(build_trace(trace, params, trace_format, block_size))
                 if trace is not None else
                 tiny_setup(name, seed, params_for(name, params, all_mode=False)))
        _run_engine(setup, runs,
                    pool_tokens=pool_tokens, page_size=page_size, seed=seed, device=device,
                    baseline=baseline, json_out=json_out, progress=progress)
        return
    if trace is not None:
        runs = build_runs(policy, config)
        wl = build_trace(trace, params, trace_format, block_size)
        wls = [wl]
    else:
        wls = build_workloads(name, params, seed)
        runs = build_runs(policy, config)
    check_workload_pools(wls, pool_tokens, page_size)
    common: dict[str, Any] = {"verbose": bool(getattr(ctx.obj, "verbose", False)),
                              "pool_tokens": pool_tokens, "page_size": page_size, "seed": seed,
                              "json_out": json_out, "plot": plot, "metrics": metrics,
                              "progress": progress, "jobs": jobs, "oracle": oracle}
    if len(wls) == 1 and name != ALL:
        _run_single(wls[0], runs, **common)
    else:
        _run_matrix(wls, runs, **common)


def _list_workloads(json_out: bool) -> None:
    """The built-in workloads with their summaries and parameters."""
    from radix_evict.sim.workloads import WORKLOADS

    specs = [WORKLOADS[n].describe() for n in workload_names()]
    if json_out:
        output.emit_json({"workloads": specs})
        return
    from rich.table import Table

    t = Table(title="workloads (simulate --workload NAME --param KEY=VALUE)",
              title_justify="left")
    for col in ("workload", "summary", "parameters (default)"):
        t.add_column(col, overflow="fold")
    for s in specs:
        ps = ", ".join(f"{p['name']}={p['default']}" for p in s["params"])
        t.add_row(s["name"], s["summary"], ps)
    output.stdout().print(t)


def _device_name(device: str) -> str:
    """What ``auto`` resolves to: cuda when a GPU is visible, else cpu."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
