"""Named, seed-deterministic workloads for `radix-evict simulate`, and the Mooncake reader.

``get_workload(name, seed=0, **params)`` builds one; ``workload_names()`` lists
them; ``WORKLOADS[name]`` is the spec (summary, parameter dataclass, builder).
Parameters may be given as strings (``"600"``), as a command line would: they
are converted to the parameter's type, and an unknown name is an error that
names the valid ones.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from radix_evict.cache.args import check_int
from radix_evict.sim.workloads import agentic, chat, hot_set, popularity_shift, priority_tiers
from radix_evict.sim.workloads.base import (
    Event,
    Request,
    Session,
    SessionWorkload,
    Turn,
    Workload,
    WorkloadError,
    WorkloadParams,
    WorkloadTypeError,
    param_docs,
)
from radix_evict.sim.workloads.trace import (
    MooncakeTrace,
    TraceError,
    TraceFileError,
    TraceParams,
    load_trace,
)
from radix_evict.suggest import did_you_mean

DEFAULT_WORKLOAD = chat.NAME


@dataclass(frozen=True)
class WorkloadSpec:
    """A registered workload: its name, one-line summary, parameters and builder."""

    name: str
    summary: str
    params_type: type[WorkloadParams]
    builder: Callable[..., SessionWorkload]

    def make_params(self, **params: Any) -> WorkloadParams:
        """Validated parameters; strings are converted to each field's type."""
        known = {f.name for f in fields(self.params_type)}
        hints = typing.get_type_hints(self.params_type)
        values: dict[str, Any] = {}
        for key, value in params.items():
            if key not in known:
                near = did_you_mean(key, sorted(known))
                hint = f"; {near}" if near else ""
                raise WorkloadError(
                    f"workload {self.name!r} has no parameter {key!r}{hint} "
                    f"(parameters: {', '.join(sorted(known))})"
                )
            values[key] = _coerce(key, value, hints[key])
        return self.params_type(**values)

    def build(self, seed: int = 0, **params: Any) -> SessionWorkload:
        return self.builder(seed, self.make_params(**params))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "params": param_docs(self.params_type)}


def _coerce(key: str, value: Any, typ: Any) -> Any:
    """Convert a command-line string to int/float; leave typed values to validation."""
    if not isinstance(value, str):
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    try:
        if typ is int:
            return int(value)
        if typ is float:
            return float(value)
    except ValueError:
        raise WorkloadError(f"{key} must be {typ.__name__}, got {value!r}") from None
    return value


WORKLOADS: dict[str, WorkloadSpec] = {
    m.NAME: WorkloadSpec(m.NAME, m.SUMMARY, p, b)
    for m, p, b in (
        (chat, chat.ChatParams, chat.build_chat),
        (hot_set, hot_set.HotSetParams, hot_set.build_hot_set),
        (popularity_shift, popularity_shift.ShiftParams, popularity_shift.build_popularity_shift),
        (priority_tiers, priority_tiers.TierParams, priority_tiers.build_priority_tiers),
        (agentic, agentic.AgenticParams, agentic.build_agentic),
    )
}


def workload_names() -> list[str]:
    """Registered workload names, the default (`chat`) first."""
    return list(WORKLOADS)


def get_workload(name: str, seed: int = 0, **params: Any) -> SessionWorkload:
    """Build workload ``name`` for ``seed``; unknown names and parameters raise WorkloadError."""
    spec = WORKLOADS.get(name)
    if spec is None:
        prefix = next((w for w in WORKLOADS if w.startswith(name)), None)
        near = f"did you mean {prefix!r}?" if prefix else did_you_mean(name, WORKLOADS)
        hint = f"; {near}" if near else ""
        raise WorkloadError(f"unknown workload {name!r}{hint} (choices: {', '.join(WORKLOADS)})")
    seed = check_int("seed", seed, 0, type_error=WorkloadTypeError, value_error=WorkloadError)
    return spec.build(seed, **params)


__all__ = [
    "DEFAULT_WORKLOAD",
    "WORKLOADS",
    "Event",
    "MooncakeTrace",
    "Request",
    "Session",
    "SessionWorkload",
    "TraceError",
    "TraceFileError",
    "TraceParams",
    "Turn",
    "Workload",
    "WorkloadError",
    "WorkloadParams",
    "WorkloadSpec",
    "WorkloadTypeError",
    "get_workload",
    "load_trace",
    "param_docs",
    "workload_names",
]
