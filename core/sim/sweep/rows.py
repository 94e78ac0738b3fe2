"""One result row per cell: the figures tools read, in files and on stdout.

A row is a flat dict of JSON types whose schema is
:class:`~radix_evict.sim.sweep.schema.ResultRow`. ``cell`` is the cell's key (see
:attr:`~radix_evict.sim.sweep.grid.Cell.key`); ``status`` is ``ok`` or
``error`` (with ``error`` saying why). Timings (:data:`TIMING_FIELDS`) are
the only fields that differ between two runs of the same cell. A timed
cell replays with ``timing=`` (the oracle too: ``replay_oracle(..., timing=)``)
and its row adds the timing axes and the timed figures (virtual time, as
deterministic as the hit rate). A cell with a host tier replays with
``host=`` (:meth:`Cell.host_spec`) and its row adds the host point and the
host tier's figures (``ReplayResult.host``); the references run one-tier.
A fleet cell (``Cell.fleet``: replicas behind a router) replays with
:func:`~radix_evict.sim.fleet.replay.replay_fleet` (:mod:`radix_evict.sim.sweep.fleet_cell`).
``via`` says how a row's figures came: ``replay`` here, ``curve`` for the lru
cells one pool-size curve pass computed (:mod:`radix_evict.sim.sweep.curve_groups`).
"""

from __future__ import annotations

import time
from typing import Any

from radix_evict.sim.bound import replay_oracle
from radix_evict.sim.ceiling import infinite_pool_ceiling
from radix_evict.sim.curve import REPLAY
from radix_evict.sim.replay import ReplayResult, replay
from radix_evict.sim.sweep.grid import CEILING, ORACLE, Cell
from radix_evict.sim.sweep.host_axes import host_key
from radix_evict.sim.sweep.schema import ERROR, OK, TIMING_FIELDS, columns
from radix_evict.sim.timed.figures import TimedFigures
from radix_evict.sim.workloads import Workload


def _blank(cell: Cell) -> dict[str, Any]:
    """Every column of the cell's kind (timed or not, host tier or not), None."""
    return dict.fromkeys(columns(cell.timing is not None, cell.host is not None,
                                 cell.fleet is not None,
                                 cell.host is not None and cell.host.admission is not None,
                                 cell.hybrid is not None))


def _coordinates(cell: Cell) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cell": cell.key,
        "policy": cell.policy,
        "config": cell.config_dict,
        "config_source": "given" if cell.config is not None else "none",
        "pool_tokens": cell.pool_tokens,
        "page_size": cell.page_size,
        "workload": cell.source.name,
        "params": cell.source.params,
        "seed": cell.seed,
    }
    if cell.timing is not None:
        point = cell.timing.key()
        out.update({"max_running": point["max_running"], "rate": point["rate"],
                    "cost_model": cell.timing.cost_model.name})
    if cell.host is not None:
        h = cell.host
        key = host_key(h)
        out.update({"host_tokens": h.tokens, "hicache_ratio": key["ratio"],
                    "write_policy": h.write_policy, "write_threshold": h.threshold,
                    "host_policy": key["policy"], "host_config": key["config"]})
        if "admission" in key:
            out["admission"] = key["admission"]
    if cell.fleet is not None:
        out.update({"replicas": cell.fleet.replicas, "router": cell.fleet.router,
                    "router_config": cell.fleet.router_config})
    if cell.hybrid is not None:
        swa, mamba = cell.hybrid.ratios()
        out.update({"model_arch": cell.hybrid.model_arch, "kv_memory": cell.hybrid.kv_memory,
                    "swa_full_tokens_ratio": swa, "mamba_full_memory_ratio": mamba})
    return out


def base_row(cell: Cell) -> dict[str, Any]:
    """Every column of the cell's kind, its coordinates filled in, the figures None."""
    row = _blank(cell)
    row.update(_coordinates(cell))
    return row


def host_figures(result: ReplayResult) -> dict[str, Any]:
    """The host columns of a two-tier replay's result (``result.host``): its real host size
    (a ratio's too) and where the prompt tokens were found, and the traffic."""
    h = result.host
    assert h is not None
    return {
        "host_tokens": h.host_tokens, "device_hit_rate": h.device_hit_rate,
        "host_hit_rate": h.host_hit_rate, "miss_rate": h.miss_rate,
        "written_tokens": h.written_tokens, "loaded_tokens": h.loaded_tokens,
        "host_evicted_tokens": h.host_evicted_tokens, "host_evictions": h.host_evictions,
        "reclaimed_tokens": h.reclaimed_tokens, "dropped_tokens": h.dropped_tokens,
        "write_failed_tokens": h.write_failed_tokens,
        "load_back_failed_tokens": h.load_back_failed_tokens, "copy_wait_s": h.copy_wait_s,
    }


def timed_figures(t: TimedFigures) -> dict[str, Any]:
    """The timed columns of a timed replay's figures (a result's ``timing``, a fleet's
    ``fleet``: the same percentiles and rates)."""
    return {
        "ttft_p50_ms": t.ttft_ms.p50, "ttft_p90_ms": t.ttft_ms.p90, "ttft_p99_ms": t.ttft_ms.p99,
        "queue_p99_ms": t.queue_ms.p99, "tpot_p50_ms": None if t.tpot_ms is None else t.tpot_ms.p50,
        "e2e_p99_ms": t.e2e_ms.p99, "slo_attainment": t.slo_attainment,
        "throughput_rps": t.throughput_rps, "goodput_rps": t.goodput_rps,
        "retractions": t.retractions, "peak_queue": t.peak_queue,
    }


def result_row(cell: Cell, result: ReplayResult, replay_s: float) -> dict[str, Any]:
    """The row of a cell that ran; ``config`` is what the replay used (tlru's derived one too)."""
    row: dict[str, Any] = _blank(cell)
    row.update(_coordinates(cell))
    row.update({
        "config": result.policy_config,
        "config_source": result.config_source,
        "pool_tokens": result.pool_tokens,
        "requests": result.requests,
        "hit_rate": result.hit_rate,
        "p50_uncached": result.p50_uncached,
        "p90_uncached": result.p90_uncached,
        "p99_uncached": result.p99_uncached,
        "mean_uncached": result.mean_uncached,
        "evicted_tokens": result.evicted_tokens,
        "failed_admissions": result.failed,
        "via": REPLAY,
        "replay_s": replay_s,
        "cache_s": result.cache_s,
        "status": OK,
    })
    if cell.timing is not None and result.timing is not None:
        row.update(timed_figures(result.timing))
    if cell.host is not None and result.host is not None:
        row.update(host_figures(result))
        if cell.host.admission is not None:
            row.update({"admission_rejected_tokens": result.host.admission_rejected_tokens,
                        "pcie_bytes": result.host.pcie_bytes})
    return row


def ceiling_row(cell: Cell, hit_rate: float, replay_s: float) -> dict[str, Any]:
    """The infinite-pool ceiling's row: a hit rate, no pool, no eviction figures."""
    row: dict[str, Any] = _blank(cell)
    row.update(_coordinates(cell))
    row.update({"hit_rate": hit_rate, "evicted_tokens": 0, "via": REPLAY,
                "replay_s": replay_s, "status": OK})
    return row


def error_row(cell: Cell, error: str) -> dict[str, Any]:
    """The row of a cell that failed: its coordinates, ``status`` error and the message."""
    row: dict[str, Any] = _blank(cell)
    row.update(_coordinates(cell))
    row.update({"status": ERROR, "error": error})
    return row


def error_text(exc: BaseException) -> str:
    """``TypeName: message``: what a failed cell's row says."""
    return f"{type(exc).__name__}: {exc}"


def run_cell(cell: Cell, workload: Workload, progress: Any = None) -> dict[str, Any]:
    """Replay one cell (the simulator's own replay) and return its row; errors become rows.

    The workload's description is left out of the replay (``workload_info={}``):
    the row does not carry it, and describing a trace costs ~0.2 s a cell. A
    timed cell replays with its TimingSpec (:meth:`Cell.timing_spec`), the
    oracle too.
    """
    t0 = time.perf_counter()
    try:
        if cell.policy == CEILING:
            ceiling = infinite_pool_ceiling(workload, cell.page_size, cell.timing_spec())
            return ceiling_row(cell, ceiling.hit_rate, time.perf_counter() - t0)
        if cell.fleet is not None:
            from radix_evict.sim.sweep.fleet_cell import run_fleet_cell

            return run_fleet_cell(cell, workload, base_row(cell), progress)
        if cell.hybrid is not None:
            from radix_evict.sim.sweep.hybrid_cell import run_hybrid_cell

            return run_hybrid_cell(cell, workload, base_row(cell))
        timing = cell.timing_spec()
        if cell.policy == ORACLE:
            result = replay_oracle(workload, pool_tokens=cell.pool_tokens,
                                   page_size=cell.page_size, progress=progress,
                                   timeline_points=0, workload_info={}, timing=timing)
        else:
            result = replay(workload, cell.policy, cell.config, pool_tokens=cell.pool_tokens,
                            page_size=cell.page_size, progress=progress, timeline_points=0,
                            workload_info={}, timing=timing, host=cell.host_spec())
    except Exception as exc:  # a plugin that raises fails its cell, not the sweep
        return error_row(cell, error_text(exc))
    return result_row(cell, result, time.perf_counter() - t0)


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """The row without its timings: equal for two runs of the same cell."""
    return {k: v for k, v in row.items() if k not in TIMING_FIELDS}
