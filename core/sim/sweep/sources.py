"""The grid's workloads, each built once: a trace is read (and checked) once for all its cells.

Workload parameters are scoped as ``simulate`` takes them: ``KEY=V`` applies
to every workload (or trace) that has the parameter ``KEY``; ``NAME.KEY=V``
to workload ``NAME`` only, and ``trace.KEY=V`` to the traces (``limit``,
``block_size``, and ``format`` to name a trace format instead of detecting
it). A parameter that fits none of the grid's workloads is an error, as is a
scope that names none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from radix_evict.sim.sweep.grid import Cell, Source
from radix_evict.sim.traces import open_trace
from radix_evict.sim.workloads import (
    WORKLOADS,
    TraceFileError,
    TraceParams,
    Workload,
    WorkloadError,
    get_workload,
)

TRACE_SCOPE = "trace"
TRACE_FORMAT = "format"  # trace.format=NAME: the trace format (default: detected)
WorkloadKey = tuple[Source, int | None]


def _known(kind: str, name: str) -> set[str]:
    if kind == "trace":
        return {f.name for f in dataclasses.fields(TraceParams)} | {TRACE_FORMAT}
    return {f.name for f in dataclasses.fields(WORKLOADS[name].params_type)}


def make_sources(
    workloads: Sequence[str],
    traces: Sequence[str | Path],
    params: Iterable[tuple[str | None, str, Any]] = (),
) -> list[Source]:
    """Sources for ``workloads`` (names) and ``traces`` (paths), ``(scope, key, value)`` params."""
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise WorkloadError(f"unknown workload {unknown[0]!r} (choices: {', '.join(WORKLOADS)})")
    targets = [("workload", w) for w in workloads] + [("trace", str(t)) for t in traces]
    chosen: dict[tuple[str, str], dict[str, Any]] = {t: {} for t in targets}
    for scope, key, value in params:
        if scope is not None and scope != TRACE_SCOPE and scope not in workloads:
            raise WorkloadError(f"parameter {scope}.{key}: {scope!r} is not one of the sweep's "
                                f"workloads ({', '.join(workloads) or 'none'}) nor "
                                f"{TRACE_SCOPE!r}")
        fits = [
            t for t in targets
            if (scope is None or (t[0] == "trace" if scope == TRACE_SCOPE else t[1] == scope))
            and key in _known(*t)
        ]
        if not fits:
            where = f"{scope}." if scope else ""
            raise WorkloadError(f"parameter {where}{key}: none of the sweep's workloads has it")
        for t in fits:
            chosen[t][key] = value
    return [Source.workload(n, chosen[("workload", n)]) if kind == "workload"
            else Source.trace(n, chosen[("trace", n)]) for kind, n in targets]


def build_workload(source: Source, seed: int | None) -> Workload:
    """The workload one source and seed replay (a trace is read and checked here)."""
    if source.kind == "trace":
        path = Path(source.name)
        if not path.exists():
            raise TraceFileError(source.name, None, "no such file")
        if path.is_dir():
            raise TraceFileError(source.name, None, "is a directory, expected a JSONL trace")
        params = source.params
        return open_trace(path, params.pop(TRACE_FORMAT, None), **params)
    return get_workload(source.name, seed=seed or 0, **source.params)


def build_workloads(cells: Iterable[Cell]) -> dict[WorkloadKey, Workload]:
    """Each distinct workload of ``cells``, built once (in grid order)."""
    out: dict[WorkloadKey, Workload] = {}
    for cell in cells:
        if cell.workload_key not in out:
            out[cell.workload_key] = build_workload(*cell.workload_key)
    return out


def default_pools(workloads: Mapping[WorkloadKey, Workload]) -> dict[WorkloadKey, int]:
    """Each workload's own pool size, for cells that leave the pool to the workload."""
    return {k: w.default_pool_tokens for k, w in workloads.items()}
