"""``plan``'s options, checked and built before any probe: the workload, the settings, the probe.

:class:`PlanRequest` holds the values the command line gives (plain types);
:func:`prepare_plan` checks each (an :class:`~radix_evict.errors.OptionError`
naming the option), reads the trace or builds the workload, validates every
policy and router config strictly, and returns a :class:`PreparedPlan` whose
:meth:`~PreparedPlan.run` is the plan. A router is ``NAME`` or
``NAME=JSON`` (its config, checked by the router registry), as sweep's ``--router``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.errors import OptionError
from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.fleet.plan import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_PERCENTILE,
    CapacityPlan,
    FleetProbe,
    PlanSetting,
    Probe,
    plan_capacity,
)
from radix_evict.sim.fleet.plan_cells import ROW_PERCENTILES, CellProbe
from radix_evict.sim.host import build_host, check_host_fits, check_transfer
from radix_evict.sim.hybrid_replay import HybridSpec
from radix_evict.sim.preflight import check_pool, check_workload_pools
from radix_evict.sim.reads import path_inputs
from radix_evict.sim.setup import build_runs, build_trace, build_workloads
from radix_evict.sim.sweep.fleet_axes import check_router, parse_router
from radix_evict.sim.sweep.values import SweepValueError, counts_of
from radix_evict.sim.timed.options import DEFAULT_OBJECTIVE, build_timing, check_page
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import DEFAULT_WORKLOAD, Workload
from radix_evict.sim.workloads.select import params_for, parse_params, trace_params

__all__ = ["DEFAULT_ROUTER", "PlanRequest", "PreparedPlan", "prepare_plan"]

DEFAULT_ROUTER = "cache_aware"  # sglang-router's default policy


@dataclass(frozen=True)
class PlanRequest:
    """What ``plan`` was asked, as plain values (the command line's options of the same names)."""

    slo_ttft: float
    trace: Path | None = None
    workload: str | None = None
    param: list[str] | None = None
    seed: int = 0
    percentile: int = DEFAULT_PERCENTILE
    policy: list[str] | None = None
    config: list[str] | None = None
    router: list[str] | None = None
    host_tokens: list[str] | None = None  # sizes as written: N1,N2 with K/M/G (0: none)
    pool_tokens: int | None = None
    page_size: int = 1
    cost_model: str | None = None
    max_running: int | None = None
    model_arch: str | None = None  # each replica on this hybrid model's cache (docs/hybrid.md)
    kv_memory: str | None = None  # per replica
    swa_full_tokens_ratio: float | None = None
    mamba_full_memory_ratio: float | None = None
    max_replicas: int = DEFAULT_MAX_REPLICAS
    start_replicas: int = 1  # the first probe: a guess; the search goes below it if it meets
    jobs: int | None = None
    out: Path | None = None  # a sweep result file: probes kept as fleet cells' rows (resume)
    ray: str | None = None  # run the probes as Ray tasks (the sweep's executor) at this address


def _routers(values: Sequence[str]) -> list[tuple[str, dict[str, Any] | None]]:
    """``--router`` values, each a router and its config checked by the registry."""
    out = []
    try:
        for v in values:
            name, config = parse_router(v)
            check_router(name, config)
            out.append((name, config))
    except SweepValueError as exc:
        raise OptionError(str(exc), invalid=True) from None
    return out


def _hosts(values: Sequence[str] | None) -> list[HostTierSpec | None]:
    """``--host-tokens`` values (0: no host tier), each a host tier's setting."""
    try:
        sizes = counts_of(values, "--host-tokens") or [0]
    except SweepValueError as exc:
        raise OptionError(str(exc)) from None
    out: list[HostTierSpec | None] = []
    for t in dict.fromkeys(sizes):
        out.append(None if t == 0 else build_host(
            host_tokens=t, hicache_ratio=None, write_policy=None, write_threshold=None,
            host_policy=None, host_config=None))
    return out


def _workload(r: PlanRequest) -> Workload:
    if r.trace is not None and r.workload is not None:
        raise OptionError("give --trace or --workload, not both")
    params = parse_params(r.param or [])
    if r.trace is not None:
        return build_trace(r.trace, params)
    wls = build_workloads(r.workload or DEFAULT_WORKLOAD, params, r.seed)
    if len(wls) != 1:
        raise OptionError(f"--workload {r.workload}: plan sizes one workload; give one name")
    return wls[0]


@dataclass
class PreparedPlan:
    """Everything ``plan`` checked: the workload, the settings and the probe that replays them."""

    workload: Workload
    settings: list[PlanSetting]
    probe: FleetProbe
    request: PlanRequest
    cells: CellProbe | None = None  # with --out: probes as sweep cells, kept in the file

    def run(self, on_probe: Callable[[PlanSetting, Probe], None] | None = None,
            probe: Callable[[PlanSetting, int], Probe] | None = None) -> CapacityPlan:
        """The plan; with a result file, each new probe's row is written as its round ends
        (and the file's lock released at the end, however it ends)."""
        r, cells = self.request, self.cells

        def heard(s: PlanSetting, p: Probe) -> None:
            if cells is not None:
                cells.keep(p)
            if on_probe is not None:
                on_probe(s, p)

        try:
            if cells is not None and cells.results is not None:
                cells.results.repair()
            return plan_capacity(self.settings, probe or cells or self.probe,
                                 slo_ttft_ms=r.slo_ttft, percentile=r.percentile,
                                 max_replicas=r.max_replicas, jobs=r.jobs or 1,
                                 start=r.start_replicas, on_probe=heard,
                                 run_round=None if probe or not cells else cells.run_round)
        finally:
            if cells is not None and cells.results is not None:
                cells.results.close()


def _cell_probe(r: PlanRequest, wl: Workload, timing: TimingSpec,
                hosts: Sequence[HostTierSpec | None]) -> CellProbe | None:
    """``--out`` or ``--ray``: probes as the sweep's fleet cells, run by its executors (local
    processes or Ray tasks), resumed from and kept in the file."""
    if r.out is None and r.ray is None:
        return None
    from radix_evict.outputs import refuse_inputs
    from radix_evict.sim.sweep.cell import Source, page_pool
    from radix_evict.sim.sweep.hybrid_axes import HybridPoint
    from radix_evict.sim.sweep.run import local_executor, ray_executor
    from radix_evict.sim.sweep.store import ResultFile, ResultFileError
    from radix_evict.sim.sweep.timing_axes import TimingPoint

    params = parse_params(r.param or [])
    if r.trace is not None:
        source, seed = Source.trace(r.trace, trace_params(params)), None
    else:
        name = r.workload or DEFAULT_WORKLOAD
        source, seed = Source.workload(name, params_for(name, params, all_mode=False)), r.seed
    point = TimingPoint(r.max_running, None, timing.cost_model, slo_ttft_ms=r.slo_ttft)
    executor = ray_executor(r.ray) if r.ray is not None else local_executor(r.jobs or 1)
    results = None
    if r.out is not None:
        refuse_inputs("--out", r.out, "plan result file", path_inputs("--trace", [r.trace]))
        try:
            results = ResultFile(r.out, write=True, timed=True,
                                 host=any(h is not None for h in hosts), fleet=True,
                                 hybrid=r.model_arch is not None)
        except ResultFileError as exc:
            raise OptionError(str(exc)) from None
    return CellProbe(wl, source, seed, page_pool(r.pool_tokens, r.page_size), r.page_size,
                     point, r.percentile, results, executor,
                     None if r.trace is None else source.name,
                     None if r.model_arch is None else HybridPoint(
                         r.model_arch, r.kv_memory, r.swa_full_tokens_ratio,
                         r.mamba_full_memory_ratio))


def prepare_plan(r: PlanRequest) -> PreparedPlan:
    """Every check before the first probe, in order; errors name the option."""
    if not r.slo_ttft > 0:
        raise OptionError(f"--slo-ttft must be positive, got {r.slo_ttft}")
    if not 1 <= r.percentile <= 100:
        raise OptionError(f"--percentile must be a whole number in 1..100, got {r.percentile}")
    if (r.out or r.ray) is not None and r.percentile not in ROW_PERCENTILES:
        where = "--out" if r.out is not None else "--ray"
        raise OptionError(f"--percentile {r.percentile} with {where}: a sweep row holds p50, p90 "
                          "and p99 TTFT; give one of those")
    if r.max_replicas < 1:
        raise OptionError(f"--max-replicas must be at least 1, got {r.max_replicas}")
    if not 1 <= r.start_replicas <= r.max_replicas:
        raise OptionError(f"--start-replicas must be in 1..--max-replicas ({r.max_replicas}), "
                          f"got {r.start_replicas}")
    check_pool(r.pool_tokens, r.page_size)
    routers = _routers(r.router or [DEFAULT_ROUTER])
    timing = build_timing(timing=True, seed=r.seed, objective=DEFAULT_OBJECTIVE,
                          max_running=r.max_running, cost_model=r.cost_model,
                          slo_ttft=r.slo_ttft)
    assert timing is not None
    check_page(timing, r.page_size)
    hosts = _hosts(r.host_tokens)
    for host in hosts:
        check_transfer(host, timing.cost_model)
    runs = build_runs(r.policy or ["lru"], r.config or [])
    wl = _workload(r)
    check_workload_pools([wl], r.pool_tokens, r.page_size)
    pool = r.pool_tokens or wl.default_pool_tokens
    for host in hosts:
        check_host_fits(host, [pool])
    settings = [PlanSetting.of(run, name, config, host)
                for host in hosts for name, config in routers for run in runs]
    hybrid = _hybrid(r, wl, runs, hosts)
    if hybrid is not None:
        pool = hybrid.pools.full_tokens
    probe = FleetProbe(wl, pool, r.page_size, timing, r.percentile, r.seed, hybrid)
    return PreparedPlan(wl, settings, probe, r, _cell_probe(r, wl, timing, hosts))


def _hybrid(r: PlanRequest, wl: Workload, runs: Sequence[PolicyRun],
            hosts: Sequence[HostTierSpec | None]) -> HybridSpec | None:
    """``--model-arch``: the hybrid cache each replica has (None without it), every policy
    checked on it; what it does not go with named."""
    from radix_evict.sim.fleet.hybrid import check_hybrid_runs
    from radix_evict.sim.hybrid_replay import build_spec
    from radix_evict.sim.models.presets import layout_from

    if r.model_arch is None:
        if (r.kv_memory, r.swa_full_tokens_ratio, r.mamba_full_memory_ratio) != (None,) * 3:
            raise OptionError("--kv-memory, --swa-full-tokens-ratio and "
                              "--mamba-full-memory-ratio go with --model-arch")
        return None
    from radix_evict.cache.hybrid.host import check_host_spec

    try:
        spec = build_spec(layout_from(r.model_arch), kv_memory=r.kv_memory,
                          pool_tokens=r.pool_tokens, default_tokens=wl.default_pool_tokens,
                          page_size=r.page_size, swa_ratio=r.swa_full_tokens_ratio,
                          mamba_ratio=r.mamba_full_memory_ratio)
        check_hybrid_runs(runs, spec)
        for host in hosts:
            if host is not None:
                check_host_spec(host)
    except ValueError as e:
        raise OptionError(f"--model-arch: {e}") from None
    return spec
