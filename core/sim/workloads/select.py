"""Which workloads a run replays: ``NAME``, ``A,B`` or ``all``, each with the parameters
that apply to it, and a trace with its own (``simulate``'s and ``sweep``'s --workload,
--trace and --param).

A parameter is ``KEY=V`` or ``WORKLOAD.KEY=V`` (anything with ``workload``,
``key`` and ``value``): a scoped one applies to its workload only; a bare one
to the one workload, or, with several, to each that has KEY. Problems raise
:class:`~radix_evict.sim.workloads.WorkloadError` naming the parameter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from radix_evict.sim.workloads import (
    WORKLOADS,
    TraceParams,
    Workload,
    WorkloadError,
    get_workload,
    workload_names,
)

ALL = "all"


class WorkloadParam(Protocol):
    """One ``[WORKLOAD.]KEY=VALUE`` (``cli.options.Param``)."""

    @property
    def workload(self) -> str | None: ...

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> Any: ...


def _fields(params_type: type[Any]) -> set[str]:
    return {f.name for f in dataclasses.fields(params_type)}


def workload_list(name: str) -> list[str]:
    """``all``, one name, or a comma-separated list of names."""
    if name == ALL:
        return workload_names()
    return [n.strip() for n in name.split(",") if n.strip()]


def params_for(name: str, params: Sequence[WorkloadParam], *, all_mode: bool) -> dict[str, Any]:
    """The parameters that apply to workload ``name``."""
    spec = WORKLOADS.get(name)
    known = _fields(spec.params_type) if spec is not None else set()
    out: dict[str, Any] = {}
    for p in params:
        if p.workload is not None:
            if p.workload == name:
                out[p.key] = p.value
        elif not all_mode or p.key in known:
            out[p.key] = p.value
    return out


def check_param_scopes(params: Sequence[WorkloadParam], all_mode: bool) -> None:
    """Scoped params must name a workload; bare ones under ``all`` must fit at least one."""
    names = workload_names()
    for p in params:
        if p.workload is not None and p.workload not in names:
            raise WorkloadError(f"--param {p.workload}.{p.key}: unknown workload "
                                f"{p.workload!r} (workloads: {', '.join(names)})")
        if p.workload is None and all_mode and not any(
            p.key in _fields(WORKLOADS[n].params_type) for n in names
        ):
            raise WorkloadError(f"--param {p.key}: no workload has this parameter")


def select_workloads(names: Sequence[str], params: Sequence[WorkloadParam],
                     seed: int) -> list[Workload]:
    """Each named workload built for ``seed`` with the parameters that apply to it."""
    several = len(names) > 1
    check_param_scopes(params, several)
    return [get_workload(n, seed=seed, **params_for(n, params, all_mode=several))
            for n in names]


def trace_params(params: Sequence[WorkloadParam]) -> dict[str, Any]:
    """The parameters a trace takes (bare keys of :class:`TraceParams` only)."""
    known = _fields(TraceParams)
    kwargs: dict[str, Any] = {}
    for p in params:
        if p.workload is not None or p.key not in known:
            raise WorkloadError(f"--param {p.key}: a trace takes only "
                                f"{', '.join(sorted(known))}")
        kwargs[p.key] = p.value
    return kwargs


__all__ = ["ALL", "WorkloadParam", "check_param_scopes", "params_for",
           "select_workloads", "trace_params", "workload_list"]
