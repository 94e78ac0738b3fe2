"""``simulate``'s steps: what was asked, checked and built before any replay, then the replays.

:class:`SimulateSettings` holds what a caller asks for (the command line's
options, as plain values). :func:`prepare` checks all of it before anything
runs (each problem an :class:`~radix_evict.errors.OptionError` naming its
option) and builds what the replays take, once: the policy runs
(:class:`~radix_evict.sim.configs.PolicyRun`, :mod:`radix_evict.sim.setup`),
the workloads or the trace, the timed replay's
:class:`~radix_evict.sim.timed.spec.TimingSpec`
(:mod:`radix_evict.sim.timed.options`), the host tier's
:class:`~radix_evict.cache.host_tier.HostTierSpec` (:mod:`radix_evict.sim.host`)
and the output files. The :class:`SimulatePlan` it returns says which of
four things to do: the replays (:func:`replay_plan`, one workload or a
policy x workload matrix, with their references and recommendations), lru's
pool-size curve (:func:`curve_plan`), a fleet's replays (``--replicas``:
:func:`radix_evict.sim.fleet.simulate.fleet_plan`), or the tiny decoder's
replays, which the engine runs (:mod:`radix_evict.engine.compare`). Notes for people and
progress go through a :class:`Reporter` (the command line's prints them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.errors import OptionError
from radix_evict.outputs import OutputFile, check_output
from radix_evict.sim.bound import Bound
from radix_evict.sim.configs import PolicyRun, derived_for
from radix_evict.sim.curve import CURVE
from radix_evict.sim.draw import check_plot
from radix_evict.sim.failures import AllRunsFailedError, RunFailure
from radix_evict.sim.fleet.replay import FleetSpec
from radix_evict.sim.fleet.simulate import (
    FLEET_MODE,
    FleetReport,
    check_fleet,
    fleet_plan,
    refuse_with_fleet,
)
from radix_evict.sim.host import build_host, check_host_fits, check_transfer
from radix_evict.sim.hybrid_replay import HybridReport, HybridSpec
from radix_evict.sim.pool_curve_options import curve_sizes, refuse_with_curve
from radix_evict.sim.pool_curve_runs import CurveRun, curve_with_references
from radix_evict.sim.preflight import (
    check_params,
    check_pool,
    check_workload_pools,
    device_option,
)
from radix_evict.sim.reads import at_files, config_files, cost_model_files, path_inputs
from radix_evict.sim.recommend import NOTHING_SERVED, recommend_workloads
from radix_evict.sim.report import SimulateReport
from radix_evict.sim.results import ReplayResult
from radix_evict.sim.runs import policy_matrix, replay_policies
from radix_evict.sim.setup import build_runs, build_trace, build_workloads
from radix_evict.sim.timed.options import DEFAULT_OBJECTIVE, build_timing, check_page
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import NothingServedError, ObjectiveError
from radix_evict.sim.workloads import DEFAULT_WORKLOAD, Workload
from radix_evict.sim.workloads.select import ALL, params_for, parse_params, workload_list

__all__ = ["CURVE_MODE", "ENGINE_MODE", "FLEET_MODE", "HYBRID_MODE", "QUIET", "REPLAY_MODE",
           "CurveReport", "Reporter", "SimulatePlan", "SimulateSettings", "curve_plan",
           "derived_notes", "fleet_replays", "hybrid_plan", "prepare", "replay_plan"]

ProgressFn = Callable[[int, int], None]
REPLAY_MODE, CURVE_MODE, ENGINE_MODE = "replay", "pool-curve", "engine"
HYBRID_MODE = "hybrid"  # --model-arch (radix_evict.sim.hybrid_replay)


@dataclass(frozen=True)
class SimulateSettings:
    """What ``simulate`` is asked for, as plain values (the command line's options, by name;
    None where not given)."""

    workload: str | None = None  # NAME, A,B or all (default: chat)
    param: Sequence[str] | None = None  # [WORKLOAD.]KEY=VALUE
    trace: Path | None = None
    trace_format: str = "auto"
    block_size: int | None = None
    seed: int = 0
    pool_tokens: int | None = None
    page_size: int = 1
    pool_curve: str | None = None  # sizes, as sweep's --pool-tokens takes them
    policy: Sequence[str] | None = None
    config: Sequence[str] | None = None  # JSON, NAME=JSON or @FILE
    oracle: bool = False
    objective: str = DEFAULT_OBJECTIVE
    hints: Sequence[str] | None = None  # hint models (radix_evict.sim.hints)
    timing: bool = False
    max_running: int | None = None
    rate: float | None = None
    concurrency: int | None = None
    time_scale: float | None = None
    cost_model: str | None = None
    slo_ttft: float | None = None
    slo_tpot: float | None = None
    chunked_prefill_size: int | None = None
    replicas: int | None = None  # a fleet (radix_evict.sim.fleet): N replicas behind a router
    router: str | None = None
    router_config: str | None = None  # JSON or @FILE
    host_tokens: int | None = None
    hicache_ratio: float | None = None
    write_policy: str | None = None
    write_threshold: int | None = None
    host_policy: str | None = None
    host_config: str | None = None
    admission: str | None = None  # the host tier's (radix_evict.cache.admission)
    plot: Path | None = None
    metrics: Path | None = None
    force: bool = False
    jobs: int | None = None
    model: str | None = None
    device: str = "auto"
    baseline: bool = True
    model_arch: str | None = None  # a hybrid model's layout (radix_evict.sim.models)
    kv_memory: str | None = None  # its KV budget, e.g. 40GiB
    swa_full_tokens_ratio: float | None = None
    mamba_full_memory_ratio: float | None = None

    @property
    def policies(self) -> list[str]:
        return list(self.policy or [])

    @property
    def configs(self) -> list[str]:
        return list(self.config or [])


class Reporter(Protocol):
    """Where notes for people and progress go (the command line: stderr and a bar)."""

    def note(self, text: str) -> None: ...

    def progress(self, what: str) -> AbstractContextManager[ProgressFn]: ...


class _Quiet:
    """A reporter that says nothing (a library caller's default)."""

    def note(self, text: str) -> None:
        pass

    @contextmanager
    def progress(self, what: str) -> Iterator[ProgressFn]:
        yield lambda done, total: None


QUIET: Reporter = _Quiet()


@dataclass(frozen=True)
class SimulatePlan:
    """What :func:`prepare` built: ``mode`` says what to run with it.

    ``workloads``: the one workload or trace (the pool curve, the engine: a
    tiny workload or the trace), or the matrix's workloads. ``single``: one
    workload's tables, not a matrix's.
    """

    mode: str
    runs: list[PolicyRun]
    workloads: list[Workload]
    timing: TimingSpec | None = None
    host: HostTierSpec | None = None
    plot: OutputFile | None = None
    metrics: OutputFile | None = None
    device: str = "cpu"
    single: bool = True
    sizes: list[int] = field(default_factory=list)  # the pool curve's
    fleet: FleetSpec | None = None  # the fleet mode's
    hybrid: HybridSpec | None = None  # the hybrid mode's

    @property
    def workload(self) -> Workload:
        return self.workloads[0]


def prepare(s: SimulateSettings, *, models: Collection[str] = ()) -> SimulatePlan:
    """Every check ``simulate`` makes before a replay, in order, and what they build.

    ``models``: the decoders ``--model`` may name (the engine's presets; the
    simulator does not import the engine).
    """
    if s.trace is not None and s.workload is not None:
        raise OptionError("give --trace or --workload, not both")
    device = device_option(s.device)
    reads = [*path_inputs("--trace", [s.trace]),
             *cost_model_files("--cost-model", [s.cost_model]),
             *at_files("--config", s.configs), *at_files("--host-config", [s.host_config]),
             *at_files("--router-config", [s.router_config])]
    plot = check_plot(s.plot, force=s.force, inputs=reads)
    metrics = None
    if s.metrics is not None:
        from radix_evict.sim.metrics import METRICS_OURS  # prometheus_client: only if asked

        metrics = check_output(s.metrics, "--enable-metrics", "metrics file", METRICS_OURS,
                               force=s.force, inputs=reads)
    if s.trace is None and (s.trace_format != "auto" or s.block_size is not None):
        raise OptionError("--trace-format and --block-size go with --trace")
    params = parse_params(s.param or [])
    check_params(params)
    check_pool(s.pool_tokens, s.page_size)
    name = s.workload or DEFAULT_WORKLOAD
    timing = build_timing(timing=s.timing, seed=s.seed, objective=s.objective,
                          max_running=s.max_running, rate=s.rate, concurrency=s.concurrency,
                          time_scale=s.time_scale, cost_model=s.cost_model,
                          slo_ttft=s.slo_ttft, slo_tpot=s.slo_tpot,
                          chunked_prefill_size=s.chunked_prefill_size)
    fleet = check_fleet(replicas=s.replicas, router=s.router, router_config=s.router_config,
                        timing=timing, seed=s.seed)
    if fleet is not None:
        refuse_with_fleet(single=s.trace is not None or (
            name != ALL and len(workload_list(name)) == 1), oracle=s.oracle,
            metrics=s.metrics is not None)
    host = build_host(host_tokens=s.host_tokens, hicache_ratio=s.hicache_ratio,
                      write_policy=s.write_policy, write_threshold=s.write_threshold,
                      host_policy=s.host_policy, host_config=s.host_config,
                      admission=s.admission)

    def workloads() -> list[Workload]:
        if s.trace is not None:
            return [build_trace(s.trace, params, s.trace_format, s.block_size)]
        return build_workloads(name, params, s.seed)

    if s.model_arch is not None:
        return _prepare_hybrid(s, workloads, timing, fleet, host, {
            "--pool-curve": s.pool_curve is not None,
            "--model": s.model is not None, "--hints": bool(s.hints), "--oracle": s.oracle,
            "--plot": s.plot is not None, "--enable-metrics": s.metrics is not None})
    if s.kv_memory or s.swa_full_tokens_ratio or s.mamba_full_memory_ratio:
        raise OptionError("--kv-memory and the ratios go with --model-arch")
    if s.pool_curve is not None:
        refuse_with_curve(policies=s.policies, pool_tokens=s.pool_tokens, timing=timing,
                          host=host, model=s.model, metrics=s.metrics,
                          workloads=1 if s.trace is not None
                          else 0 if name == ALL else len(workload_list(name)))
        sizes = curve_sizes(s.pool_curve, s.page_size)
        runs = build_runs(s.policies or ["lru"], s.configs)  # lru's config, checked as ever
        wls = workloads()[:1]
        return SimulatePlan(CURVE_MODE, runs, wls, plot=_reading(plot, runs), device=device,
                            sizes=sizes)
    check_host_fits(host, [s.pool_tokens] if s.pool_tokens else [])
    if timing is not None:
        check_transfer(host, timing.cost_model)
    check_page(timing, s.page_size)
    if s.model is not None:
        _refuse_with_model(s, name, models, timing=timing, host=host)
        runs = build_runs(s.policies, s.configs)
        if s.trace is not None:
            wls = workloads()
        else:
            from radix_evict.sim.workloads.tiny import tiny_workload

            wls = [tiny_workload(name, seed=s.seed, **params_for(name, params, all_mode=False))]
        return SimulatePlan(ENGINE_MODE, runs, wls, device=device)
    runs = build_runs(s.policies, s.configs)
    wls = workloads()
    if s.hints:
        from radix_evict.sim.hints import with_hints

        try:
            wls = [with_hints(wl, s.hints) for wl in wls]
        except ValueError as e:
            raise OptionError(f"--hints: {e}") from None
    check_workload_pools(wls, s.pool_tokens, s.page_size)
    plot, metrics = _reading(plot, runs), _reading(metrics, runs)  # a weights file is read too
    check_host_fits(host, [s.pool_tokens or wl.default_pool_tokens for wl in wls])
    if fleet is not None:
        return SimulatePlan(FLEET_MODE, runs, wls, timing, host, plot, None, device, fleet=fleet)
    return SimulatePlan(REPLAY_MODE, runs, wls, timing, host, plot, metrics, device,
                        single=len(wls) == 1 and name != ALL)


HYBRID_POLICIES = ("lru", "lfu", "slru", "priority")  # what the hybrid tree can score


def _prepare_hybrid(s: SimulateSettings, workloads: Callable[[], list[Workload]],
                    timing: TimingSpec | None, fleet: FleetSpec | None,
                    host: HostTierSpec | None, refused: dict[str, bool]) -> SimulatePlan:
    """--model-arch: one workload through a hybrid model's cache (docs/hybrid.md); with
    --replicas, on a fleet of them (``sim.fleet.hybrid``)."""
    from radix_evict.sim.hybrid_replay import build_spec
    from radix_evict.sim.models.presets import layout_from

    for option, given in refused.items():
        if given:
            raise OptionError(f"--model-arch does not go with {option}")
    assert s.model_arch is not None
    try:
        layout = layout_from(s.model_arch)
        wls = workloads()
        if len(wls) != 1:
            raise OptionError("--model-arch replays one workload or trace")
        spec = build_spec(layout, kv_memory=s.kv_memory, pool_tokens=s.pool_tokens,
                          default_tokens=wls[0].default_pool_tokens, page_size=s.page_size,
                          swa_ratio=s.swa_full_tokens_ratio,
                          mamba_ratio=s.mamba_full_memory_ratio)
    except ValueError as e:
        raise OptionError(f"--model-arch: {e}") from None
    runs = build_runs(s.policies or list(HYBRID_POLICIES), s.configs)
    check_page(timing, s.page_size)
    if host is not None:
        try:
            from radix_evict.cache.hybrid.host import check_host_spec

            check_host_spec(host)
        except ValueError as e:
            raise OptionError(f"--model-arch: {e}") from None
        if timing is not None:
            check_transfer(host, timing.cost_model)
    if fleet is not None:
        from radix_evict.sim.fleet.hybrid import check_hybrid_runs

        try:
            check_hybrid_runs(runs, spec)
        except ValueError as e:
            raise OptionError(f"--model-arch: {e}") from None
        return SimulatePlan(FLEET_MODE, runs, wls, timing, host, fleet=fleet, hybrid=spec)
    return SimulatePlan(HYBRID_MODE, runs, wls, timing, host, hybrid=spec)


def fleet_replays(plan: SimulatePlan, s: SimulateSettings, reporter: Reporter = QUIET
                  ) -> FleetReport:
    """--replicas: each policy on the plan's fleet (with --model-arch, each replica on the
    hybrid model's cache)."""
    assert plan.fleet is not None and plan.timing is not None
    return fleet_plan(plan.runs, plan.workload, fleet=plan.fleet, timing=plan.timing,
                      host=plan.host, pool_tokens=s.pool_tokens, page_size=s.page_size,
                      seed=s.seed, reporter=reporter, hybrid=plan.hybrid)


def hybrid_plan(plan: SimulatePlan) -> HybridReport:
    """The hybrid mode's replays: each policy through the layout's cache."""
    from radix_evict.sim.hybrid_replay import hybrid_report

    assert plan.hybrid is not None
    try:
        return hybrid_report(plan.workload, plan.hybrid, [(r.policy, r.config) for r in plan.runs],
                             plan.timing, plan.host)
    except ValueError as e:
        raise OptionError(f"--model-arch: {e}") from None


def _reading(out: OutputFile | None, runs: Sequence[PolicyRun]) -> OutputFile | None:
    """``out`` checked against the files the runs' configs name too."""
    return None if out is None else out.reading(config_files((r.policy, r.config) for r in runs))


def _refuse_with_model(s: SimulateSettings, name: str, models: Collection[str], *,
                       timing: TimingSpec | None, host: HostTierSpec | None) -> None:
    """What ``--model`` cannot go with, each refused saying why."""
    if host is not None:
        raise OptionError("--model tiny replays one tier; the host tier is for token and "
                          "timed replays")
    if timing is not None:
        raise OptionError("--timing models time; --model tiny measures it: give one")
    if s.model not in models:
        raise OptionError(f"--model {s.model!r}: models: {', '.join(models)}")
    if s.trace is None and len(workload_list(name)) != 1:
        raise OptionError("--model tiny replays one workload or one trace (no 'all')")
    if s.plot is not None or s.metrics is not None or s.oracle:
        raise OptionError("--plot, --enable-metrics and --oracle are for token replays, "
                          "not --model")


def derived_notes(workloads: Sequence[Workload], runs: Sequence[PolicyRun],
                  note: Callable[[str], None]) -> dict[str, Any]:
    """Say which configs are derived from the workloads (a run without a config whose policy
    derives one); return ``{NAME_derived: {workload: ...}}`` for the JSON document (empty
    where the config was given or the policy did not run)."""
    out: dict[str, Any] = {}
    for policy, found in derived_for(workloads, runs).items():
        if len(found) == 1:
            (name, d), = found.items()
            text = (f"{policy}: no --config given, so simulate derives it from {name}: "
                    f"{d.config}.")
            note(f"{text} {d.derivation}" if d.derivation else text)
        elif found:
            rule = next(iter(found.values())).rule
            each = "; ".join(f"{n} {d.config}" for n, d in found.items())
            note(f"{policy}: no --config given, so simulate derives one per workload"
                 f"{f' ({rule})' if rule else ''}: {each}")
        out[f"{policy}_derived"] = {n: d.to_dict() for n, d in found.items()}
    return out


def _warn_failed(results: Sequence[ReplayResult], note: Callable[[str], None]) -> None:
    for r in results:
        if r.failed:
            note(f"warning: {r.workload} / {r.label}: {r.failed:,} of {r.requests:,} "
                 "requests found no room even after eviction (pool too small?); "
                 "their prompts count as uncached")


def replay_plan(plan: SimulatePlan, s: SimulateSettings, reporter: Reporter = QUIET
                ) -> SimulateReport:
    """The replays (one workload, or a matrix with its winners), their references with
    ``--oracle``, and the recommendations: one report.

    A run that raised is left out and named in the report's ``failures``;
    AllRunsFailedError when every one did, and an OptionError when nothing
    was served or the objective cannot rank the results.
    """
    wls, runs, timing = plan.workloads, plan.runs, plan.timing
    if plan.single:
        wl = wls[0]
        pool = wl.default_pool_tokens if s.pool_tokens is None else s.pool_tokens
        reporter.note(f"workload {wl.name} (seed {wl.seed}): {wl.num_requests:,} requests; "
                      f"pool {pool:,} tokens, page {s.page_size}; policies "
                      f"{', '.join(r.name for r in runs)}")
    else:
        reporter.note(f"{len(wls)} workloads x {len(runs)} policies: "
                      f"{sum(w.num_requests for w in wls) * len(runs):,} request replays")
    derived = derived_notes(wls, runs, reporter.note)
    t0 = time.perf_counter()
    failures: list[RunFailure] = []
    common: dict[str, Any] = {"pool_tokens": s.pool_tokens, "page_size": s.page_size,
                              "workers": s.jobs, "failures": failures, "timing": timing,
                              "host": plan.host}
    matrix = None
    with reporter.progress(f"replaying {wls[0].name}" if plan.single
                           else "policy x workload") as prog:
        if plan.single:
            results = replay_policies(wls[0], runs, progress=prog, **common)
        else:
            matrix = policy_matrix(wls, runs, seed=s.seed, progress=prog, **common,
                                   objective=s.objective if timing is not None else "hit-rate")
            results = matrix.results
    if not results:
        raise AllRunsFailedError(failures)
    bounds: dict[str, Bound] = {}
    if s.oracle:
        from radix_evict.sim.bound import compute_bounds

        with reporter.progress("oracle and ceiling") as prog:
            bounds = compute_bounds(wls, results, pool_tokens=s.pool_tokens,
                                    page_size=s.page_size, progress=prog, workers=s.jobs,
                                    timing=timing)
    wall = time.perf_counter() - t0
    _warn_failed(results, reporter.note)
    try:
        recs = recommend_workloads([w.name for w in wls], results, matrix,
                                   timed=timing is not None, objective=s.objective)
    except NothingServedError:
        raise OptionError(NOTHING_SERVED, invalid=True) from None
    except ObjectiveError as exc:
        raise OptionError(str(exc)) from None
    return SimulateReport(wls, [r.name for r in runs], results, recs, s.seed, s.page_size,
                          s.pool_tokens, matrix, bounds, derived, failures, timing,
                          s.objective, plan.host, wall)


@dataclass(frozen=True)
class CurveReport:
    """``--pool-curve``'s figures: the curve, with ``--oracle`` the references, and the time."""

    workload: Workload
    run: CurveRun
    seed: int
    page_size: int
    oracle: bool
    wall_s: float

    def to_json(self) -> dict[str, Any]:
        return {"mode": CURVE_MODE, "seed": self.seed, **self.run.to_dict(),
                "oracle": self.oracle, "total_wall_s": self.wall_s}

    def wall_note(self) -> str:
        """How the sizes were computed, and how long it took."""
        points = self.run.curve.points
        done = sum(p.source == CURVE for p in points)
        return (f"wall time {self.wall_s:.2f} s: {done} of {len(points)} sizes from one "
                f"pass ({self.run.curve.pass_s:.2f} s), {len(points) - done} replayed "
                f"on their own ({self.run.curve.replay_s:.2f} s)"
                + ("; oracle and ceiling alongside" if self.oracle else ""))


def curve_plan(plan: SimulatePlan, s: SimulateSettings, reporter: Reporter = QUIET
               ) -> CurveReport:
    """lru at every pool size of the plan from one replay (and the references)."""
    wl, sizes, oracle = plan.workload, plan.sizes, s.oracle
    seeded = "" if wl.seed is None else f" (seed {wl.seed})"
    reporter.note(f"workload {wl.name}{seeded}: {wl.num_requests:,} requests; lru at "
                  f"{len(set(sizes))} pool sizes from one replay (page {s.page_size})")
    if oracle:
        reporter.note(f"oracle: one Belady replay per pool size ({len(set(sizes))} replays; "
                      "it has no inclusion property to share) and the infinite-pool "
                      "ceiling, side by side with the curve's pass")
    t0 = time.perf_counter()
    with reporter.progress(f"pool curve of {wl.name}") as prog:
        run = curve_with_references(wl, sizes, s.page_size, oracle=oracle, workers=s.jobs,
                                    progress=prog)
    wall = time.perf_counter() - t0
    for p in run.curve.points:
        if p.source != CURVE:
            reporter.note(f"pool curve: pool {p.pool_tokens:,}: {p.inexact}; replayed on its "
                          "own")
        if p.failed:
            reporter.note(f"warning: pool {p.pool_tokens:,}: {p.failed:,} of {p.requests:,} "
                          "requests found no room even after eviction (pool too small?); "
                          "their prompts count as uncached")
    return CurveReport(wl, run, s.seed, s.page_size, oracle, wall)
