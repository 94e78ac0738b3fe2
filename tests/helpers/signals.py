"""Ctrl-C in tests that start with SIGINT ignored.

A shell runs a background job with SIGINT ignored, children inherit that, and
Python keeps an ignored SIGINT at startup: a test that interrupts a process
must give it the default disposition itself, or the SIGINT never arrives.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


def default_sigint() -> None:
    """``preexec_fn`` for a child the test will interrupt: SIGINT as a terminal sends it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def ctrl_c_raises() -> Iterator[None]:
    """In this process: SIGINT raises KeyboardInterrupt (Python's own handler) meanwhile."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
