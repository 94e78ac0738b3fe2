"""A replay that raised: kept as a record, so one broken policy does not cost the others' figures.

Comparing five policies where a sixth (a plugin's, say) raises in ``score()``
should still show the five, and say exactly which policy, from which
distribution, failed on which workload and how. :func:`guarded` wraps one
replay job so that its exception comes back as a :class:`RunFailure` (plain
strings: it crosses from a worker process by pickling) instead of aborting
the whole batch.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from radix_evict.errors import PolicyError

T = TypeVar("T")


@dataclass(frozen=True)
class RunFailure:
    """One (workload, policy run) whose replay raised, and why."""

    workload: str
    label: str
    policy: str
    source: str  # "dist version (entry point 'ep')": where the policy comes from
    error: str  # one line naming the policy, its distribution and the exception
    traceback: str = field(default="", repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.workload} / {self.label}: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "label": self.label, "policy": self.policy,
                "source": self.source, "error": self.error}


def policy_source(policy: str) -> str:
    """Where ``policy`` is registered from, for messages (never raises)."""
    from radix_evict.policies.registry import registry

    try:
        return registry.get(policy).source
    except Exception:
        return "an unknown distribution"


def describe_failure(policy: str, label: str, exc: Exception) -> str:
    """The one line: a PolicyError already names policy and distribution; others get both."""
    if isinstance(exc, PolicyError):
        return str(exc)
    run = f"policy {policy!r}" + (f" (run {label!r})" if label != policy else "")
    return f"{run} from {policy_source(policy)} failed: {type(exc).__name__}: {exc}"


def guarded(
    job: Callable[[Any], T], *, workload: str, label: str, policy: str
) -> Callable[[Any], T | RunFailure]:
    """``job`` with any Exception it raises returned as a RunFailure (Ctrl-C still propagates)."""

    def run(progress: Any) -> T | RunFailure:
        try:
            return job(progress)
        except Exception as exc:
            return RunFailure(
                workload=workload, label=label, policy=policy, source=policy_source(policy),
                error=describe_failure(policy, label, exc),
                traceback="".join(traceback.format_exception(exc)),
            )

    return run
