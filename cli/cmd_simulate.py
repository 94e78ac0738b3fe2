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
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.runs import PolicyRun, policy_matrix, replay_policies
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import DEFAULT_WORKLOAD, Workload

from . import output, simulate_failures
from .errors import EXIT_INVALID, EXIT_USAGE, CliError, mark_json
from .options import parse_params
from .preflight import (
    check_output,
    check_params,
    check_plot,
    check_pool,
    check_workload_pools,
    device_option,
)
from .simulate_curve import PoolCurveOpt
from .simulate_derived import derived_notes
from .simulate_host import (
    HicacheRatioOpt,
    HostConfigOpt,
    HostPolicyOpt,
    HostTokensOpt,
    WritePolicyOpt,
    WriteThresholdOpt,
    build_host,
    check_host_fits,
    check_transfer,
    host_json,
    host_table,
)
from .simulate_options import (
    BaselineOpt,
    BlockSizeOpt,
    ChunkedPrefillOpt,
    ConcurrencyOpt,
    ConfigOpt,
    CostModelOpt,
    DeviceOpt,
    JobsOpt,
    JsonOpt,
    ListOpt,
    MaxRunningOpt,
    MetricsOpt,
    ModelOpt,
    ObjectiveOpt,
    OracleOpt,
    PageOpt,
    ParamOpt,
    PlotOpt,
    PolicyOpt,
    PoolOpt,
    ProgressOpt,
    RateOpt,
    SeedOpt,
    SloTpotOpt,
    SloTtftOpt,
    TimeScaleOpt,
    TimingOpt,
    TraceFormatOpt,
    TraceOpt,
    WorkloadOpt,
)
from .simulate_recommend import (
    NOTHING_SERVED,
    RULE,
    print_recommendation,
    recommend,
    recommend_served,
)
from .simulate_report import (
    TIERS_WORKLOAD,
    add_bound_json,
    hit_rate_pivot,
    list_workloads_table,
    matrix_table,
    policy_table,
    tier_table,
)
from .simulate_setup import ALL, build_runs, build_trace, build_workloads, params_for, workload_list
from .simulate_timing import (
    build_timing,
    check_page,
    recommend_timed,
    timed_table,
    timing_json,
)
from .writes import ForceOpt, at_files, config_files, cost_model_files, path_inputs


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


def _bounds(wls: Sequence[Workload], results: Sequence[ReplayResult], *,
            pool_tokens: int | None, page_size: int, progress: bool,
            jobs: int | None, timing: TimingSpec | None = None) -> dict[str, Bound]:
    """--oracle: the offline bound and infinite-pool ceiling of every workload."""
    from radix_evict.sim.bound import compute_bounds

    with output.progress_bar("oracle and ceiling", enabled=progress) as prog:
        return compute_bounds(wls, results, pool_tokens=pool_tokens, page_size=page_size,
                              progress=prog, workers=jobs, timing=timing)


def _run_single(wl: Workload, runs: list[PolicyRun], *, pool_tokens: int | None,
                page_size: int, seed: int, json_out: bool, plot: OutputFile | None,
                metrics: OutputFile | None, progress: bool, jobs: int | None,
                oracle: bool = False, verbose: bool = False, timing: TimingSpec | None = None,
                objective: str = "hit-rate", host: HostTierSpec | None = None) -> None:
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
                                  progress=prog, workers=jobs, failures=failures,
                                  timing=timing, host=host)
    if not results:
        raise simulate_failures.all_failed(failures)
    bound = None
    if oracle:
        bound = _bounds([wl], results, pool_tokens=pool_tokens, page_size=page_size,
                        progress=progress, jobs=jobs, timing=timing)[wl.name]
    wall = time.perf_counter() - t0
    _warn_failed(results)
    rec = recommend_served(results) if timing is None else recommend_timed(results, objective)

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
        if timing is not None:
            data.update(timing_json(timing, objective))
        if host is not None:
            data.update(host_json(host))
        output.emit_json(data)
    else:
        out = output.stdout()
        title = f"{wl.name}: {len(results)} policies"
        # With a host tier the bound is the host table's (the one-tier gap says nothing there).
        table_bound = bound if host is None else None
        if timing is not None:
            out.print(timed_table(results, rec.policy, title + " (timed replay)", table_bound))
        else:
            out.print(policy_table(results, rec.policy, title, table_bound))
        if host is not None:
            out.print(host_table(results, f"{wl.name}: device and host tiers", bound))
        if wl.name == TIERS_WORKLOAD:
            out.print(tier_table(results, "hit rate per priority tier"))
        print_recommendation(rec)
    output.note(f"wall time {wall:.2f} s for {len(results)} replays of "
                f"{wl.num_requests:,} requests")
    simulate_failures.finish(failures, verbose)


def _run_matrix(wls: list[Workload], runs: list[PolicyRun], *, pool_tokens: int | None,
                page_size: int, seed: int, json_out: bool, plot: OutputFile | None,
                metrics: OutputFile | None, progress: bool, jobs: int | None,
                oracle: bool = False, verbose: bool = False, timing: TimingSpec | None = None,
                objective: str = "hit-rate", host: HostTierSpec | None = None) -> None:
    """Several workloads: policy x workload matrix with a winner per workload."""
    output.note(f"{len(wls)} workloads x {len(runs)} policies: "
                f"{sum(w.num_requests for w in wls) * len(runs):,} request replays")
    derived = derived_notes(wls, runs)
    t0 = time.perf_counter()
    failures: list[RunFailure] = []
    with output.progress_bar("policy x workload", enabled=progress) as prog:
        m = policy_matrix(wls, runs, seed=seed, pool_tokens=pool_tokens, page_size=page_size,
                          progress=prog, workers=jobs, failures=failures, timing=timing,
                          objective=objective if timing is not None else "hit-rate",
                          host=host)
    if not m.results:
        raise simulate_failures.all_failed(failures)
    bounds: dict[str, Bound] = {}
    if oracle:
        bounds = _bounds(wls, m.results, pool_tokens=pool_tokens, page_size=page_size,
                         progress=progress, jobs=jobs, timing=timing)
    wall = time.perf_counter() - t0
    _warn_failed(m.results)
    names = [w.name for w in wls if w.name in m.winners]  # the core named each winner
    if not names:
        raise CliError(NOTHING_SERVED, EXIT_INVALID)
    if timing is None:
        recs = {w: recommend([r for r in m.results if r.workload == w],
                             (m.cell(w, m.winners[w]), m.tie_breaks.get(w, False)))
                for w in names}
    else:
        recs = {w: recommend_timed([r for r in m.results if r.workload == w], objective)
                for w in names}
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
        if timing is not None:
            data.update(timing_json(timing, objective))
        if host is not None:
            data.update(host_json(host))
        output.emit_json(data)
    else:
        out = output.stdout()
        out.print(matrix_table(names, m.policies, m.results, winners,
                               bounds if host is None else {}))
        if timing is not None:
            for w in names:
                cells = [m.cell(w, p) for p in m.policies]
                out.print(timed_table(cells, winners[w], f"{w} (timed replay)"))
        if host is not None:
            for w in names:
                cells = [m.cell(w, p) for p in m.policies]
                out.print(host_table(cells, f"{w}: device and host tiers", bounds.get(w)))
        out.print(hit_rate_pivot(names, m.policies, m.results, winners, bounds))
        if tiers:
            out.print(tier_table(tiers, f"{TIERS_WORKLOAD}: hit rate per priority tier"))
        for w, rec in recs.items():
            print_recommendation(rec, prefix=f"{w}: ")
    output.note(f"wall time {wall:.2f} s for {len(m.results)} replays")
    simulate_failures.finish(failures, verbose)


def _pool_curve(text: str, *, policy: list[str], config: list[str], trace: Any, name: str,
                params: Any, trace_format: str, block_size: int | None,
                pool_tokens: int | None, page_size: int, seed: int,
                timing: TimingSpec | None, host: HostTierSpec | None, model: str | None,
                metrics: Any, oracle: bool, json_out: bool, plot: OutputFile | None,
                progress: bool, jobs: int | None) -> None:
    """--pool-curve: lru at many pool sizes from one replay (simulate_curve.py)."""
    from .simulate_curve import curve_sizes, refuse_with_curve, run_pool_curve

    refuse_with_curve(policies=policy, pool_tokens=pool_tokens, timing=timing, host=host,
                      model=model, metrics=metrics,
                      workloads=1 if trace is not None
                      else 0 if name == ALL else len(workload_list(name)))
    sizes = curve_sizes(text, page_size)
    runs = build_runs(policy or ["lru"], config)  # lru's config, checked as simulate checks
    wl = (build_trace(trace, params, trace_format, block_size) if trace is not None
          else build_workloads(name, params, seed)[0])
    named = config_files((r.policy, r.config) for r in runs)
    run_pool_curve(wl, sizes, page_size=page_size, seed=seed, oracle=oracle,
                   json_out=json_out, plot=None if plot is None else plot.reading(named),
                   progress=progress, jobs=jobs)


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
    force: ForceOpt = False,
    model: ModelOpt = None,
    device: DeviceOpt = "auto",
    baseline: BaselineOpt = True,
    progress: ProgressOpt = True,
    list_workloads: ListOpt = False,
    jobs: JobsOpt = None,
    oracle: OracleOpt = False,
    timing: TimingOpt = False,
    max_running: MaxRunningOpt = None,
    rate: RateOpt = None,
    concurrency: ConcurrencyOpt = None,
    time_scale: TimeScaleOpt = None,
    cost_model: CostModelOpt = None,
    slo_ttft: SloTtftOpt = None,
    slo_tpot: SloTpotOpt = None,
    objective: ObjectiveOpt = "hit-rate",
    chunked_prefill_size: ChunkedPrefillOpt = None,
    host_tokens: HostTokensOpt = None,
    hicache_ratio: HicacheRatioOpt = None,
    write_policy: WritePolicyOpt = None,
    write_threshold: WriteThresholdOpt = None,
    host_policy: HostPolicyOpt = None,
    host_config: HostConfigOpt = None,
    pool_curve: PoolCurveOpt = None,
) -> None:
    """Which policy should I run? Replay a workload under each policy and recommend one.

    With no arguments: the built-in chat workload (shared system prompts,
    growing conversations, priorities, agentic tool loops) under lru, lfu,
    slru, priority and tlru.
    """
    mark_json(ctx.obj, json_out)
    policy, config = policy or [], config or []
    if list_workloads:
        list_workloads_table(json_out)
        return
    if trace is not None and workload is not None:
        raise CliError("give --trace or --workload, not both", EXIT_USAGE)
    resolved_device = device_option(device)
    reads = [*path_inputs("--trace", [trace]), *cost_model_files("--cost-model", [cost_model]),
             *at_files("--config", config), *at_files("--host-config", [host_config])]
    plot_out = check_plot(plot, force=force, inputs=reads)
    metrics_out = None
    if metrics is not None:
        from .simulate_metrics import METRICS_OURS

        metrics_out = check_output(metrics, "--enable-metrics", "metrics file", METRICS_OURS,
                                   force=force, inputs=reads)
    if trace is None and (trace_format != "auto" or block_size is not None):
        raise CliError("--trace-format and --block-size go with --trace", EXIT_USAGE)
    params = parse_params(param or [])
    check_params(params)
    check_pool(pool_tokens, page_size)
    name = workload or DEFAULT_WORKLOAD
    timed = build_timing(timing=timing, seed=seed, objective=objective,
                         max_running=max_running, rate=rate, concurrency=concurrency,
                         time_scale=time_scale, cost_model=cost_model, slo_ttft=slo_ttft,
                         slo_tpot=slo_tpot, chunked_prefill_size=chunked_prefill_size)
    host = build_host(host_tokens=host_tokens, hicache_ratio=hicache_ratio,
                      write_policy=write_policy, write_threshold=write_threshold,
                      host_policy=host_policy, host_config=host_config)
    if pool_curve is not None:
        _pool_curve(pool_curve, policy=policy, config=config, trace=trace, name=name,
                    params=params, trace_format=trace_format, block_size=block_size,
                    pool_tokens=pool_tokens, page_size=page_size, seed=seed, timing=timed,
                    host=host, model=model, metrics=metrics, oracle=oracle,
                    json_out=json_out, plot=plot_out, progress=progress, jobs=jobs)
        return
    check_host_fits(host, [pool_tokens] if pool_tokens else [])
    if timed is not None:
        check_transfer(host, timed.cost_model)
    check_page(timed, page_size)
    if model is not None:
        if host is not None:
            raise CliError("--model tiny replays one tier; the host tier is for token and "
                           "timed replays", EXIT_USAGE)
        if timed is not None:
            raise CliError("--timing models time; --model tiny measures it: give one",
                           EXIT_USAGE)
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
        from .simulate_engine import run_engine_mode, tiny_setup, tiny_trace_setup

        setup = (tiny_trace_setup(build_trace(trace, params, trace_format, block_size))
                 if trace is not None else
                 tiny_setup(name, seed, params_for(name, params, all_mode=False)))
        run_engine_mode(setup, runs,
                    pool_tokens=pool_tokens, page_size=page_size, seed=seed,
                    device=resolved_device, model=model, baseline=baseline, json_out=json_out,
                    progress=progress)
        return
    if trace is not None:
        runs = build_runs(policy, config)
        wl = build_trace(trace, params, trace_format, block_size)
        wls = [wl]
    else:
        wls = build_workloads(name, params, seed)
        runs = build_runs(policy, config)
    check_workload_pools(wls, pool_tokens, page_size)
    named = config_files((r.policy, r.config) for r in runs)  # a weights file is read too
    plot_out, metrics_out = (None if o is None else o.reading(named)
                             for o in (plot_out, metrics_out))
    check_host_fits(host, [pool_tokens or wl.default_pool_tokens for wl in wls])
    common: dict[str, Any] = {"verbose": bool(getattr(ctx.obj, "verbose", False)),
                              "pool_tokens": pool_tokens, "page_size": page_size, "seed": seed,
                              "json_out": json_out, "plot": plot_out, "metrics": metrics_out,
                              "progress": progress, "jobs": jobs, "oracle": oracle,
                              "timing": timed, "objective": objective, "host": host}
    if len(wls) == 1 and name != ALL:
        _run_single(wls[0], runs, **common)
    else:
        _run_matrix(wls, runs, **common)
