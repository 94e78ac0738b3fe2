"""``radix-evict simulate``: which policy should I run? Replays and a recommendation.

Modes: one workload (the default ``chat``, ``--workload NAME`` or ``--trace
FILE``), a policy x workload matrix (``--workload all`` or ``A,B``),
``--pool-curve`` (lru at many pool sizes from one replay) and ``--model tiny``
(real K/V, measured TTFT). The steps are the library's
(:mod:`radix_evict.sim.simulate`: every option checked and built before any
replay, then the replays; the engine's for ``--model``:
:mod:`radix_evict.engine.compare`); this module prints what they report.
"""

from __future__ import annotations

import typer

from radix_evict.engine.compare import MODELS, compare, engine_requests
from radix_evict.sim.configs import describe_workload
from radix_evict.sim.draw import plot_curve, plot_report
from radix_evict.sim.fleet.draw import plot_fleet
from radix_evict.sim.recommend import NOTHING_SERVED, Recommendation, recommend
from radix_evict.sim.report import TIERS_WORKLOAD, SimulateReport
from radix_evict.sim.simulate import (
    CURVE_MODE,
    ENGINE_MODE,
    FLEET_MODE,
    HYBRID_MODE,
    SimulatePlan,
    SimulateSettings,
    curve_plan,
    derived_notes,
    fleet_replays,
    hybrid_plan,
    prepare,
    replay_plan,
)
from radix_evict.sim.winner import NothingServedError

from . import output
from .command import options_command
from .errors import EXIT_INVALID, EXIT_USAGE, CliError, mark_json
from .simulate_options import PANELS, SimulateOptions
from .simulate_report import (
    curve_table,
    engine_table,
    fleet_table,
    hit_rate_pivot,
    host_table,
    list_workloads_table,
    matrix_table,
    policy_table,
    render,
    replica_table,
    tier_table,
    timed_table,
)


def _say(rec: Recommendation, prefix: str = "") -> None:
    output.stdout().print(f"{prefix}Recommendation: run {rec.policy}: {rec.reason}.",
                          markup=False, highlight=False)


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
    _say(rec)


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
        _say(rec, prefix=f"{w}: ")


def _replays(plan: SimulatePlan, o: SimulateOptions, s: SimulateSettings, verbose: bool) -> None:
    """Replay, then write the optional files, then the JSON document or the tables."""
    rep = replay_plan(plan, s, output.Terminal(o.progress))
    # Files first: if one fails, stdout has not yet had its one JSON document.
    if plan.plot is not None:
        plot_report(plan.plot, rep)
        output.note(f"wrote plot {plan.plot.path}")
    if plan.metrics is not None:
        from radix_evict.sim.metrics import write_metrics

        write_metrics(plan.metrics, rep.results)
        output.note(f"wrote metrics {plan.metrics.path}")
    if o.json_out:
        output.emit_json(rep.to_json())
    elif rep.matrix is None:
        _show_single(rep)
    else:
        _show_matrix(rep)
    output.note(rep.wall_note(plan.single))
    if rep.failures:  # the others' figures stand; these are named, and the exit code is 2
        for f in rep.failures:
            output.error(f"{f}; its results are left out")
            if verbose and f.traceback:
                output.stderr().print(f.traceback, markup=False, highlight=False)
        raise typer.Exit(EXIT_USAGE)


def _pool_curve(plan: SimulatePlan, o: SimulateOptions, s: SimulateSettings) -> None:
    """--pool-curve: the curve (and the references), the plot, then the table or JSON."""
    rep = curve_plan(plan, s, output.Terminal(o.progress))
    if plan.plot is not None:
        plot_curve(plan.plot, rep.run, f"{rep.workload.name}: lru hit rate by pool size "
                                       f"(page {o.page_size})")
        output.note(f"wrote plot {plan.plot.path}")
    if o.json_out:
        output.emit_json(rep.to_json())
    else:
        output.stdout().print(curve_table(rep.run, f"{rep.workload.name}: lru by pool size"))
    output.note(rep.wall_note())


def _fleet(plan: SimulatePlan, o: SimulateOptions, s: SimulateSettings) -> None:
    """--replicas: each policy on the fleet; the plot, then the tables or JSON."""
    rep = fleet_replays(plan, s, output.Terminal(o.progress))
    if plan.plot is not None:
        plot_fleet(plan.plot, rep.results, rep.title)
        output.note(f"wrote plot {plan.plot.path}")
    if o.json_out:
        output.emit_json(rep.to_json())
    else:
        output.stdout().print(fleet_table(rep.results, rep.title + " (timed replay)"))
        for r in rep.results:
            output.stdout().print(replica_table(r, f"{r.policy}: per replica"))
    output.note(rep.wall_note())


def _engine(plan: SimulatePlan, o: SimulateOptions) -> None:
    """--model: the replays through the tiny decoder, measured TTFT per policy."""
    wl, model = plan.workload, o.model or "tiny"
    requests = engine_requests(wl, trace=o.trace is not None)
    output.note(f"model {model} on {plan.device}: workload {wl.name} shrunk to "
                f"{len(requests)} requests")
    derived_notes([wl], plan.runs, output.note)
    with output.progress_bar("engine replays", enabled=o.progress, delay_s=0.0) as prog:
        comp = compare(wl, requests, plan.runs, model=model, pool_tokens=o.pool_tokens,
                       page_size=o.page_size, device=plan.device, seed=o.seed,
                       baseline=o.baseline, progress=prog)
    for line in comp.warnings(wl.name):
        output.note(line)
    try:
        rec = recommend(comp.cached)
    except NothingServedError:
        raise CliError(NOTHING_SERVED, EXIT_INVALID) from None
    if o.json_out:
        output.emit_json(comp.to_json(describe_workload(wl), rec.to_dict()))
    else:
        output.stdout().print(engine_table(comp.table_rows(), rec.policy, comp.title(wl.name)))
        _say(rec)
    output.note(f"wall time {comp.wall_s:.2f} s for {len(comp.rows)} engine replays")


def _hybrid(plan: SimulatePlan, o: SimulateOptions) -> None:
    """--model-arch: each policy through the hybrid model's cache, hit rate per component."""
    rep = hybrid_plan(plan)
    if o.json_out:
        output.emit_json(rep.to_json())
    else:
        output.stdout().print(render(rep.table()))
    output.note(f"best ({rep.best_by}): {rep.best.policy}")


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
    s = o.settings()
    plan = prepare(s, models=MODELS)
    if plan.mode == CURVE_MODE:
        _pool_curve(plan, o, s)
    elif plan.mode == ENGINE_MODE:
        _engine(plan, o)
    elif plan.mode == FLEET_MODE:
        _fleet(plan, o, s)
    elif plan.mode == HYBRID_MODE:
        _hybrid(plan, o)
    else:
        _replays(plan, o, s, verbose=bool(getattr(ctx.obj, "verbose", False)))
