"""An exclusive, non-blocking lock on a file beside the one a sweep writes.

``flock`` on ``NAME.lock`` (created if missing, never removed: removing it
would let two sweeps lock two different files of the same name). The lock
goes with the open file, so a sweep that dies releases it; the holder's pid is
written in the file so that the refusal can say who holds it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class LockHeld(OSError):
    """Another process holds the lock; ``str()`` names the lock file (and the holder's pid)."""


class FileLock:
    """``acquire()`` takes the lock or raises LockHeld at once; ``release()`` gives it back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"process {holder} holds {self.path}" if holder.isdigit() else \
                f"{self.path} is locked"
            raise LockHeld(who) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor of the open file drops the flock
