"""Run a call that must not hang or read without end, so that a regression fails a test.

A reader that opens a FIFO blocks forever, and one that reads ``/dev/zero``
grows until the machine's OOM killer ends the whole test run. A test of the
refusal calls the reader through :func:`call_bounded`: the call runs in a
daemon thread under a time limit, with the process's address space capped a
little above its current size while it runs (Linux), so a regression is a
failed test (``BoundExceeded``) instead of a hung or killed session.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["BoundExceeded", "call_bounded"]

T = TypeVar("T")
GIB = 2**30


class BoundExceeded(AssertionError):
    """The call ran past its time limit, or ran out of the memory it was given."""


def _address_space() -> int | None:
    """This process's virtual size in bytes (Linux; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:  # a kernel file: small and regular
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def call_bounded(fn: Callable[[], T], *, seconds: float = 30.0, memory: int = 2 * GIB) -> T:
    """``fn()``'s result or exception; :class:`BoundExceeded` if it takes over ``seconds``
    or needs over ``memory`` more bytes of address space (then the call is abandoned in
    its daemon thread: a FIFO's ``open`` stays blocked, harmlessly, until the process ends,
    and the cap stays). The caller's context variables hold inside the call."""
    try:
        import resource
    except ImportError:  # not POSIX: the time limit alone
        resource = None  # type: ignore[assignment]
    done: dict[str, Any] = {}

    def run() -> None:
        try:
            done["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            done["error"] = exc

    old = None
    size = _address_space()
    if resource is not None and size is not None:
        old = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + memory
        if old[1] == resource.RLIM_INFINITY or cap < old[1]:
            resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
        else:
            old = None
    context = contextvars.copy_context()  # the caller's switches hold in the thread too
    worker = threading.Thread(target=context.run, args=(run,), name="call_bounded", daemon=True)
    try:
        worker.start()
        worker.join(seconds)
    finally:
        if old is not None and not worker.is_alive():  # still reading: keep it capped
            resource.setrlimit(resource.RLIMIT_AS, old)
    if worker.is_alive():
        raise BoundExceeded(f"still running after {seconds:g} s (blocked, or reading without "
                            "end)")
    error = done.get("error")
    if isinstance(error, MemoryError):
        raise BoundExceeded(f"needed over {memory / GIB:g} GiB more memory") from error
    if error is not None:
        raise error
    return done["value"]
