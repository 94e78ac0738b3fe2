"""The one place that turns exceptions into exit codes and messages.

Exit codes (docs/cli and the spec): 0 valid, 1 invalid input (bad policy,
key, value, trace line, workload parameter), 2 usage or environment error
(unreadable file, a needed plugin that failed, missing optional dependency).
Tracebacks are shown only with ``-v``: a user with a typo needs the message,
not our stack.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import (
    ENV_PROBLEMS,
    ConfigProblem,
    OptionError,
    PluginError,
    PolicyConfigError,
    ProblemType,
    RadixEvictError,
)
from radix_evict.outputs import OutputFileError
from radix_evict.sim.failures import AllRunsFailedError
from radix_evict.sim.workloads import TraceError, TraceFileError, WorkloadError

from . import output
from .codes import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_USAGE

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "INTERRUPTED",
    "CliError",
    "CliState",
    "classify",
    "emit_error_json",
    "mark_json",
    "problems_code",
    "report",
]


class CliError(Exception):
    """An error a command detected itself: message, exit code, optional structured problems."""

    def __init__(self, message: str, code: int = EXIT_INVALID,
                 problems: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.problems = list(problems)


@dataclass
class CliState:
    """Global flags, kept on the root click context (``ctx.obj``)."""

    verbose: bool = False
    json: bool = False  # set by a command whose --json is on, so errors come as JSON too


def problems_code(problems: Sequence[ConfigProblem]) -> int:
    """2 when a needed plugin is broken or ambiguous (environment), else 1 (invalid input)."""
    return EXIT_USAGE if any(p.type in ENV_PROBLEMS for p in problems) else EXIT_INVALID


def _trace_code(exc: TraceError) -> int:
    """A trace that cannot be read is an environment error; a bad line is invalid input."""
    return EXIT_USAGE if isinstance(exc, TraceFileError) else EXIT_INVALID


INTERRUPTED = "interrupted (Ctrl-C); nothing was written"


def classify(exc: BaseException) -> tuple[int, str, list[dict[str, Any]]]:
    """(exit code, message, problems as dicts) for any exception a command let escape."""
    if isinstance(exc, CliError):
        return exc.code, str(exc), exc.problems
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED, INTERRUPTED, []
    if isinstance(exc, output.OutputError):
        return EXIT_USAGE, str(exc), []
    if isinstance(exc, OutputFileError):  # an output refused: names the option and the path
        return EXIT_USAGE, str(exc), []
    if isinstance(exc, OptionError):  # an option the library refused, before any work
        code = (problems_code(exc.problems) if exc.problems
                else EXIT_INVALID if exc.invalid else EXIT_USAGE)
        return code, str(exc), [p.to_dict() for p in exc.problems]
    if isinstance(exc, AllRunsFailedError):  # simulate: every policy run raised
        return (EXIT_INVALID if exc.invalid else EXIT_USAGE), str(exc), \
            [f.to_dict() for f in exc.failures]
    if isinstance(exc, MemoryError):
        return EXIT_USAGE, f"out of memory: {exc or 'an allocation failed'}", []
    if isinstance(exc, PluginError):  # before PolicyConfigError: it is one
        return EXIT_USAGE, str(exc), [p.to_dict() for p in exc.problems]
    if isinstance(exc, PolicyConfigError):
        return EXIT_INVALID, str(exc), [p.to_dict() for p in exc.problems]
    if isinstance(exc, TraceError):
        problem = {"file": exc.path, "line": exc.line, "type": ProblemType.TRACE_INVALID,
                   "msg": exc.problem}
        return _trace_code(exc), str(exc), [problem]
    if isinstance(exc, WorkloadError):
        return EXIT_INVALID, str(exc), []
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return EXIT_USAGE, f"{where}{exc.strerror or exc}", []
    if isinstance(exc, ImportError):
        return EXIT_USAGE, f"missing dependency: {exc}", []
    if isinstance(exc, RadixEvictError):
        return EXIT_USAGE, f"{type(exc).__name__}: {exc}", []
    return EXIT_USAGE, f"internal error: {type(exc).__name__}: {exc}", []


QUIET_TYPES = (CliError, RadixEvictError, OSError, KeyboardInterrupt, output.OutputError,
               MemoryError)


def report(exc: BaseException, state: CliState | None) -> int:
    """Print ``exc`` for people (stderr) and, under --json, for machines (stdout); return code.

    Under --json stdout gets exactly one document: this error's, unless the
    command already wrote its answer, or stdout is what failed.
    """
    code, message, problems = classify(exc)
    verbose = bool(state and state.verbose)
    if verbose:
        output.stderr().print(_traceback(exc), markup=False, highlight=False)
    output.error(message)
    if not verbose and not isinstance(exc, QUIET_TYPES):
        output.note("(run with -v to see the traceback)")
    if state is not None and state.json:
        emit_error_json(code, message, problems)
    return code


def _traceback(exc: BaseException) -> str:
    """The traceback, its last line naming only the type: the ``error:`` line that follows
    says the message (printing it twice was the verbose output's one line too many)."""
    lines = traceback.format_exception(exc)
    lines[-1] = f"{type(exc).__module__}.{type(exc).__qualname__} (the error below)\n"
    return "".join(lines).rstrip("\n")


def emit_error_json(code: int, message: str, problems: Sequence[dict[str, Any]] = ()) -> None:
    """The error as this invocation's JSON document, if it has none yet and stdout works."""
    if output.json_written():
        return
    with contextlib.suppress(output.OutputError):  # the stderr line said what failed
        output.emit_json({"status": "error", "exit_code": code, "message": message,
                          "errors": list(problems)})


def mark_json(obj: Any, on: bool) -> None:
    """Record that the running command answers in JSON (so errors are JSON on stdout too)."""
    if isinstance(obj, CliState):
        obj.json = on
