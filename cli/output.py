"""Where output goes: data on stdout (rich tables or JSON), prose and errors on stderr.

Machines read stdout (``--json``), people read the tables; anything that is
not the command's answer (notes, warnings, errors, progress) goes to stderr
so that ``radix-evict ... --json | jq`` never sees it.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress

class StdoutClosed(Exception):  # a state, not a failure: the reader left
    """stdout's reader is gone (``| head`` read enough): ``main`` exits 141, saying nothing.

    Not an OSError, so that click does not turn it into its own silent exit 1.
    """


class OutputError(Exception):
    """stdout cannot be written (a full disk, ``> /dev/full``): said once, on stderr."""


def silence_stdout() -> None:
    """Point stdout's file descriptor at devnull, so no later flush fails (and reports) again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's buffer)
        pass


class _GuardedStdout:
    """sys.stdout for rich: a write that fails becomes one OutputError (a closed pipe stays
    BrokenPipeError, which ``main`` treats as ``| head`` having read enough)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)

    def write(self, text: str) -> int:
        return _guarded(lambda: sys.stdout.write(text))

    def flush(self) -> None:
        _guarded(sys.stdout.flush)


def _guarded(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        raise OutputError(f"cannot write the output to stdout: {exc.strerror or exc}") from None


class _Console(Console):
    """rich's Console, but a closed pipe is a BrokenPipeError for ``main`` to report (exit 141),
    not rich's own silent ``SystemExit(1)`` (1 says the input was invalid)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


# Built per call (not at import) so tests that swap sys.stdout/sys.stderr see the output.


def stdout() -> Console:
    """Console for the command's answer (tables)."""
    return _Console(file=_GuardedStdout(), soft_wrap=False, width=_width())  # type: ignore[arg-type]


def stderr() -> Console:
    """Console for notes, warnings, errors and progress."""
    return _Console(file=sys.stderr, soft_wrap=True, width=_width())


def _width() -> int | None:
    """Wide enough for the tables when not on a terminal (pipes, CI logs, CliRunner)."""
    return None if sys.stdout.isatty() else 160


def _json_default(value: Any) -> Any:
    """Make numpy scalars, tuples, sets and paths JSON-serialisable."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def _finite(value: Any) -> Any:
    """NaN/inf are not JSON: write them as null rather than emit invalid output."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def to_json(data: Any) -> str:
    """Strict JSON text (no NaN), indented for people who read it anyway."""
    return json.dumps(_finite(data), indent=2, default=_json_default, allow_nan=False)


_documents = 0  # JSON documents written by this invocation (see json_written)


def emit_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout: the machine-readable answer (one per invocation)."""
    global _documents
    text = to_json(data) + "\n"
    _guarded(lambda: sys.stdout.write(text))
    _guarded(sys.stdout.flush)
    _documents += 1


def json_written() -> bool:
    """Whether this invocation's one JSON document is already on stdout."""
    return _documents > 0


def begin_invocation() -> None:
    """Forget earlier invocations' output (tests run many in one process)."""
    global _documents
    _documents = 0


def note(text: str) -> None:
    """A line of prose for people, on stderr."""
    stderr().print(text, highlight=False, markup=False)


def error(text: str) -> None:
    """An error line on stderr, prefixed so it stands out in CI logs."""
    stderr().print(f"error: {text}", style="red", highlight=False, markup=False)


def pct(x: float) -> str:
    """A rate as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def num(x: float) -> str:
    """A token count with thousands separators (percentiles may be fractional)."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:,.1f}"


ProgressFn = Callable[[int, int], None]


@contextmanager
def progress_bar(description: str, *, enabled: bool = True, delay_s: float = 1.0
                 ) -> Iterator[ProgressFn]:
    """A ``progress(done, total)`` callback that shows a bar once work has run ``delay_s``.

    Short runs never flash a bar; a bar only appears on an interactive
    stderr, so logs and piped output stay clean.
    """
    show = enabled and sys.stderr.isatty()
    t0 = time.perf_counter()
    bar: Progress | None = None
    task: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar, task
        if not show:
            return
        if bar is None:
            if time.perf_counter() - t0 < delay_s:
                return
            from rich.progress import (  # here: most runs (pipes, CI) never show a bar
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            bar = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                           TimeElapsedColumn(), console=stderr(), transient=True)
            bar.start()
            task = bar.add_task(description, total=total)
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if bar is not None:
            bar.stop()


class Terminal:
    """The library's reporter (:class:`radix_evict.sim.simulate.Reporter`) on this terminal:
    notes on stderr, a progress bar where ``progress`` is on."""

    def __init__(self, progress: bool = True) -> None:
        self.enabled = progress

    def note(self, text: str) -> None:
        note(text)

    def progress(self, what: str) -> AbstractContextManager[ProgressFn]:
        return progress_bar(what, enabled=self.enabled)


def rendered_by(render: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a core table builder so that it returns ``render`` of what it builds.

    Core assembles a table's text; each command renders it its own way (rich,
    with its own alignment rules): ``policy_table = rendered_by(render)(tables.policy_table)``.
    """

    def wrap(build: Callable[..., Any]) -> Callable[..., Any]:
        def table(*args: Any, **kwargs: Any) -> Any:
            return render(build(*args, **kwargs))

        table.__doc__ = build.__doc__
        return table

    return wrap
