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
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from radix_evict.errors import OptionError
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
    """One ``[WORKLOAD.]KEY=VALUE`` (:class:`Param`)."""

    @property
    def workload(self) -> str | None: ...

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> Any: ...


@dataclass(frozen=True)
class Param:
    """One ``--param [WORKLOAD.]KEY=VALUE``."""

    workload: str | None
    key: str
    value: Any


def parse_value(text: str) -> Any:
    """A ``--param`` value: JSON when it parses (numbers, booleans), else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_params(values: Sequence[str]) -> list[Param]:
    """``--param`` options; a value without '=' is an OptionError."""
    out = []
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--param {raw!r}: expected KEY=VALUE (or WORKLOAD.KEY=VALUE)")
        scope, dot, name = key.strip().rpartition(".")
        out.append(Param(scope if dot else None, name, parse_value(value.strip())))
    return out


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


__all__ = ["ALL", "Param", "WorkloadParam", "check_param_scopes", "params_for", "parse_params",
           "parse_value", "select_workloads", "trace_params", "workload_list"]
