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
from typing import Any

import typer

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.outputs import OutputFile
from radix_evict.sim.bound import Bound
from radix_evict.sim.failures import RunFailure
from radix_evict.sim.recommend import recommend_workloads
from radix_evict.sim.report import TIERS_WORKLOAD, SimulateReport
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.runs import PolicyRun, policy_matrix, replay_policies
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import NothingServedError, ObjectiveError
from radix_evict.sim.workloads import DEFAULT_WORKLOAD, Workload

from . import output, simulate_failures
from .command import options_command
from .errors import EXIT_INVALID, EXIT_USAGE, CliError, mark_json
from .options import Param, parse_params
from .preflight import (
    check_output,
    check_params,
    check_plot,
    check_pool,
    check_workload_pools,
    device_option,
)
from .simulate_derived import derived_notes
from .simulate_host import build_host, check_host_fits, check_transfer
from .simulate_options import PANELS, SimulateOptions
from .simulate_recommend import NOTHING_SERVED, print_recommendation
from .simulate_report import (
    hit_rate_pivot,
    host_table,
    list_workloads_table,
    matrix_table,
    policy_table,
    tier_table,
    timed_table,
)
from .simulate_setup import ALL, build_runs, build_trace, build_workloads, params_for, workload_list
from .simulate_timing import build_timing, check_page
from .writes import at_files, config_files, cost_model_files, path_inputs


def _warn_failed(results: Sequence[ReplayResult]) -> None:
    for r in results:
        if r.failed:
            output.note(f"warning: {r.workload} / {r.label}: {r.failed:,} of {r.requests:,} "
                        "requests found no room even after eviction (pool too small?); "
                        "their prompts count as uncached")


def _write_extras(plot: OutputFile | None, metrics: OutputFile | None, draw: Any,
                  results: Sequence[ReplayResult]) -> None:
    """The optional PNG and Prometheus files, each announced on stderr."""
    if plot is not None:
        draw()
        output.note(f"wrote plot {plot.path}")
    if metrics is not None:
        from .simulate_metrics import write_metrics

        write_metrics(metrics, results)
        output.note(f"wrote metrics {metrics.path}")


def _replay(wls: list[Workload], runs: list[PolicyRun], o: SimulateOptions, *, single: bool,
            timing: TimingSpec | None, host: HostTierSpec | None) -> SimulateReport:
    """The replays (one workload, or a matrix with the core's winners) and their references."""
    if single:
        wl = wls[0]
        pool = wl.default_pool_tokens if o.pool_tokens is None else o.pool_tokens
        output.note(f"workload {wl.name} (seed {wl.seed}): {wl.num_requests:,} requests; "
                    f"pool {pool:,} tokens, page {o.page_size}; policies "
                    f"{', '.join(r.name for r in runs)}")
    else:
        output.note(f"{len(wls)} workloads x {len(runs)} policies: "
                    f"{sum(w.num_requests for w in wls) * len(runs):,} request replays")
    derived = derived_notes(wls, runs)
    t0 = time.perf_counter()
    failures: list[RunFailure] = []
    common: dict[str, Any] = {"pool_tokens": o.pool_tokens, "page_size": o.page_size,
                              "workers": o.jobs, "failures": failures, "timing": timing,
                              "host": host}
    matrix = None
    with output.progress_bar(f"replaying {wls[0].name}" if single else "policy x workload",
                             enabled=o.progress) as prog:
        if single:
            results = replay_policies(wls[0], runs, progress=prog, **common)
        else:
            matrix = policy_matrix(wls, runs, seed=o.seed, progress=prog, **common,
                                   objective=o.objective if timing is not None else "hit-rate")
            results = matrix.results
    if not results:
        raise simulate_failures.all_failed(failures)
    bounds: dict[str, Bound] = {}
    if o.oracle:
        from radix_evict.sim.bound import compute_bounds

        with output.progress_bar("oracle and ceiling", enabled=o.progress) as prog:
            bounds = compute_bounds(wls, results, pool_tokens=o.pool_tokens,
                                    page_size=o.page_size, progress=prog, workers=o.jobs,
                                    timing=timing)
    wall = time.perf_counter() - t0
    _warn_failed(results)
    try:
        recs = recommend_workloads([w.name for w in wls], results, matrix,
                                   timed=timing is not None, objective=o.objective)
    except NothingServedError:
        raise CliError(NOTHING_SERVED, EXIT_INVALID) from None
    except ObjectiveError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    return SimulateReport(wls, [r.name for r in runs], results, recs, o.seed, o.page_size,
                          o.pool_tokens, matrix, bounds, derived, failures, timing,
                          o.objective, host, wall)


def _show_single(rep: SimulateReport) -> None:
    out = output.stdout()
    wl, results = rep.workloads[0], rep.results
    (rec,) = rep.recommendations.values()
    bound = rep.bounds.get(wl.name)
    title = f"{wl.name}: {len(results)} policies"
    # With a host tier the bound is the host table's (the one-tier gap says nothing there).
    table_bound = bound if rep.host is None else None
    if rep.timing is not None:
        out.print(timed_table(results, rec.policy, title + " (timed replay)", table_bound))
    else:
        out.print(policy_table(results, rec.policy, title, table_bound))
    if rep.host is not None:
        out.print(host_table(results, f"{wl.name}: device and host tiers", bound))
    if wl.name == TIERS_WORKLOAD:
        out.print(tier_table(results, "hit rate per priority tier"))
    print_recommendation(rec)


def _show_matrix(rep: SimulateReport) -> None:
    out = output.stdout()
    assert rep.matrix is not None
    names, policies, winners = rep.names, rep.matrix.policies, rep.matrix.winners
    out.print(matrix_table(names, policies, rep.results, winners,
                           rep.bounds if rep.host is None else {}))
    for w in names if rep.timing is not None else ():
        out.print(timed_table(rep.cells(w), winners[w], f"{w} (timed replay)"))
    for w in names if rep.host is not None else ():
        out.print(host_table(rep.cells(w), f"{w}: device and host tiers", rep.bounds.get(w)))
    out.print(hit_rate_pivot(names, policies, rep.results, winners, rep.bounds))
    if rep.tiers:
        out.print(tier_table(rep.tiers, f"{TIERS_WORKLOAD}: hit rate per priority tier"))
    for w, rec in rep.recommendations.items():
        print_recommendation(rec, prefix=f"{w}: ")


def _run(wls: list[Workload], runs: list[PolicyRun], o: SimulateOptions, *, single: bool,
         timing: TimingSpec | None, host: HostTierSpec | None, plot: OutputFile | None,
         metrics: OutputFile | None, verbose: bool) -> None:
    """Replay, then write the optional files, then the JSON document or the tables."""
    rep = _replay(wls, runs, o, single=single, timing=timing, host=host)

    def draw() -> None:
        from .simulate_plot import plot_matrix, plot_single

        assert plot is not None
        if rep.matrix is None:
            (rec,) = rep.recommendations.values()
            plot_single(plot, rep.results, f"{wls[0].name}: pool {rep.results[0].pool_tokens:,} "
                        f"tokens, page {o.page_size}; recommended: {rec.policy}",
                        rep.bounds.get(wls[0].name))
        else:
            plot_matrix(plot, rep.names, rep.matrix.policies, rep.results,
                        dict(rep.matrix.winners),
                        f"policy x workload (page {o.page_size}, seed {o.seed})", rep.bounds)

    # Files first: if one fails, stdout has not yet had its one JSON document.
    _write_extras(plot, metrics, draw, rep.results)
    if o.json_out:
        output.emit_json(rep.to_json())
    elif rep.matrix is None:
        _show_single(rep)
    else:
        _show_matrix(rep)
    if single:
        output.note(f"wall time {rep.wall_s:.2f} s for {len(rep.results)} replays of "
                    f"{wls[0].num_requests:,} requests")
    else:
        output.note(f"wall time {rep.wall_s:.2f} s for {len(rep.results)} replays")
    simulate_failures.finish(rep.failures, verbose)


def _pool_curve(o: SimulateOptions, name: str, params: Sequence[Param], *,
                timing: TimingSpec | None, host: HostTierSpec | None,
                plot: OutputFile | None) -> None:
    """--pool-curve: lru at many pool sizes from one replay (simulate_curve.py)."""
    from .simulate_curve import curve_sizes, refuse_with_curve, run_pool_curve

    assert o.pool_curve is not None
    refuse_with_curve(policies=o.policies, pool_tokens=o.pool_tokens, timing=timing, host=host,
                      model=o.model, metrics=o.metrics,
                      workloads=1 if o.trace is not None
                      else 0 if name == ALL else len(workload_list(name)))
    sizes = curve_sizes(o.pool_curve, o.page_size)
    runs = build_runs(o.policies or ["lru"], o.configs)  # lru's config, checked as simulate's
    wl = (build_trace(o.trace, params, o.trace_format, o.block_size) if o.trace is not None
          else build_workloads(name, params, o.seed)[0])
    named = config_files((r.policy, r.config) for r in runs)
    run_pool_curve(wl, sizes, o, None if plot is None else plot.reading(named))


def _engine(o: SimulateOptions, name: str, params: Sequence[Param], *,
            timing: TimingSpec | None, host: HostTierSpec | None, device: str) -> None:
    """--model tiny: the replays through the tiny decoder (simulate_engine.py)."""
    if host is not None:
        raise CliError("--model tiny replays one tier; the host tier is for token and "
                       "timed replays", EXIT_USAGE)
    if timing is not None:
        raise CliError("--timing models time; --model tiny measures it: give one", EXIT_USAGE)
    from .simulate_engine import MODELS, run_engine_mode, tiny_setup, tiny_trace_setup

    if o.model not in MODELS:
        raise CliError(f"--model {o.model!r}: models: {', '.join(MODELS)}", EXIT_USAGE)
    if o.trace is None and len(workload_list(name)) != 1:
        raise CliError("--model tiny replays one workload or one trace (no 'all')", EXIT_USAGE)
    if o.plot is not None or o.metrics is not None or o.oracle:
        raise CliError("--plot, --enable-metrics and --oracle are for token replays, "
                       "not --model", EXIT_USAGE)
    runs = build_runs(o.policies, o.configs)
    setup = (tiny_trace_setup(build_trace(o.trace, params, o.trace_format, o.block_size))
             if o.trace is not None else
             tiny_setup(name, o.seed, params_for(name, params, all_mode=False)))
    run_engine_mode(setup, runs, o, device)


@options_command(SimulateOptions, PANELS)
def simulate(ctx: typer.Context, o: SimulateOptions) -> None:
    """Which policy should I run? Replay a workload under each policy and recommend one.

    With no arguments: the built-in chat workload (shared system prompts,
    growing conversations, priorities, agentic tool loops) under lru, lfu,
    slru, priority and tlru.
    """
    mark_json(ctx.obj, o.json_out)
    if o.list_workloads:
        list_workloads_table(o.json_out)
        return
    if o.trace is not None and o.workload is not None:
        raise CliError("give --trace or --workload, not both", EXIT_USAGE)
    device = device_option(o.device)
    reads = [*path_inputs("--trace", [o.trace]),
             *cost_model_files("--cost-model", [o.cost_model]),
             *at_files("--config", o.configs), *at_files("--host-config", [o.host_config])]
    plot_out = check_plot(o.plot, force=o.force, inputs=reads)
    metrics_out = None
    if o.metrics is not None:
        from .simulate_metrics import METRICS_OURS

        metrics_out = check_output(o.metrics, "--enable-metrics", "metrics file", METRICS_OURS,
                                   force=o.force, inputs=reads)
    if o.trace is None and (o.trace_format != "auto" or o.block_size is not None):
        raise CliError("--trace-format and --block-size go with --trace", EXIT_USAGE)
    params = parse_params(o.param or [])
    check_params(params)
    check_pool(o.pool_tokens, o.page_size)
    name = o.workload or DEFAULT_WORKLOAD
    timed = build_timing(timing=o.timing, seed=o.seed, objective=o.objective,
                         max_running=o.max_running, rate=o.rate, concurrency=o.concurrency,
                         time_scale=o.time_scale, cost_model=o.cost_model,
                         slo_ttft=o.slo_ttft, slo_tpot=o.slo_tpot,
                         chunked_prefill_size=o.chunked_prefill_size)
    host = build_host(host_tokens=o.host_tokens, hicache_ratio=o.hicache_ratio,
                      write_policy=o.write_policy, write_threshold=o.write_threshold,
                      host_policy=o.host_policy, host_config=o.host_config)
    if o.pool_curve is not None:
        _pool_curve(o, name, params, timing=timed, host=host, plot=plot_out)
        return
    check_host_fits(host, [o.pool_tokens] if o.pool_tokens else [])
    if timed is not None:
        check_transfer(host, timed.cost_model)
    check_page(timed, o.page_size)
    if o.model is not None:
        _engine(o, name, params, timing=timed, host=host, device=device)
        return
    runs = build_runs(o.policies, o.configs)
    wls = ([build_trace(o.trace, params, o.trace_format, o.block_size)] if o.trace is not None
           else build_workloads(name, params, o.seed))
    if o.hints:
        from radix_evict.sim.hints import with_hints

        try:
            wls = [with_hints(wl, o.hints) for wl in wls]
        except ValueError as e:
            raise CliError(f"--hints: {e}", EXIT_USAGE) from None
    check_workload_pools(wls, o.pool_tokens, o.page_size)
    named = config_files((r.policy, r.config) for r in runs)  # a weights file is read too
    plot_out, metrics_out = (None if f is None else f.reading(named)
                             for f in (plot_out, metrics_out))
    check_host_fits(host, [o.pool_tokens or wl.default_pool_tokens for wl in wls])
    _run(wls, runs, o, single=len(wls) == 1 and name != ALL, timing=timed, host=host,
         plot=plot_out, metrics=metrics_out, verbose=bool(getattr(ctx.obj, "verbose", False)))
