"""A replay that raised: kept as a record, so one broken policy does not cost the others' figures.

Comparing five policies where a sixth (a plugin's, say) raises in ``score()``
should still show the five, and say exactly which policy, from which
distribution, failed on which workload and how. :func:`guarded` wraps one
replay job so that its exception comes back as a :class:`RunFailure` (plain
strings: it crosses from a worker process by pickling) instead of aborting
the whole batch.

A failure is blamed on the policy only when the policy raised: a
:class:`~radix_evict.errors.PolicyError` (the cache wraps what ``score()``
raises, and a call back into the cache) or an exception whose traceback
passes through a method of an :class:`EvictionPolicy` (a lifecycle callback
the cache let through). An input the run cannot use is the input's
(``blame`` ``"input"``), anything else radix-evict's own (``"internal"``):
neither is reported as the policy's.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeVar

from radix_evict.errors import PolicyError, RadixEvictError

Blame = Literal["policy", "input", "internal"]

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
    blame: Blame = "policy"  # who raised: the policy, the input, or radix-evict itself

    def __str__(self) -> str:
        return f"{self.workload} / {self.label}: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "label": self.label, "policy": self.policy,
                "source": self.source, "error": self.error, "blame": self.blame}


def policy_source(policy: str) -> str:
    """Where ``policy`` is registered from, for messages (never raises)."""
    from radix_evict.policies.registry import registry

    try:
        return registry.get(policy).source
    except Exception:
        return "an unknown distribution"


def _through_policy(tb: TracebackType | None) -> bool:
    """Whether the exception passed through a policy's own method on its way up."""
    from radix_evict.policies.contract import EvictionPolicy

    while tb is not None:
        if isinstance(tb.tb_frame.f_locals.get("self"), EvictionPolicy):
            return True
        tb = tb.tb_next
    return False


def blame_of(exc: BaseException) -> Blame:
    """Who raised ``exc``: the policy, an input the run cannot use, or radix-evict itself."""
    if isinstance(exc, PolicyError) or _through_policy(exc.__traceback__):
        return "policy"
    if isinstance(exc, RadixEvictError) and isinstance(exc, ValueError):
        return "input"  # our own refusals of what we were given (TimedInputError and kin)
    return "internal"


def describe_failure(policy: str, label: str, exc: Exception) -> str:
    """The one line: the policy and its distribution only when the policy raised."""
    blame = blame_of(exc)
    run = f"policy {policy!r}" + (f" (run {label!r})" if label != policy else "")
    if blame == "input":
        return f"{run}: input refused: {exc}"
    if blame == "internal":
        return (f"{run}: internal error in radix-evict's replay (the policy did not raise "
                f"it): {type(exc).__name__}: {exc}")
    if isinstance(exc, PolicyError):
        return str(exc)
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
                traceback="".join(traceback.format_exception(exc)), blame=blame_of(exc),
            )

    return run


class AllRunsFailedError(RadixEvictError):
    """Every policy run raised: nothing to show. ``invalid``: an input every run refused
    (invalid input, said once); otherwise a policy's or radix-evict's own failure (an
    environment error), each run named."""

    def __init__(self, failures: Sequence[RunFailure]) -> None:
        self.failures = list(failures)
        self.invalid = bool(failures) and all(f.blame == "input" for f in failures)
        if self.invalid:
            reasons = dict.fromkeys(f.error.split(": input refused: ", 1)[-1] for f in failures)
            message = "input refused: " + "; ".join(reasons)
        else:
            message = "every policy run failed:\n" + "\n".join(f"  - {f}" for f in failures)
        super().__init__(message)
