"""Ctrl-C and SIGTERM against the real ``radix-evict`` process (each test runs it in a subprocess).

Ctrl-C is sent as a terminal sends it, to the whole process group; SIGTERM
as ``kill`` sends it, to the parent only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.signals import default_sigint

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc to find the worker processes")

INTERRUPTED = "error: interrupted (Ctrl-C); nothing was written"
ENV = {**os.environ, "RADIX_EVICT_PLUGINS": ""}
COMMAND = [sys.executable, "-m", "radix_evict.cli"]


def children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def wait_until(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s")


def start_matrix() -> tuple[subprocess.Popen[str], list[int]]:
    """``simulate --workload all`` with its replays running in worker processes."""
    proc = subprocess.Popen([*COMMAND, "simulate", "--workload", "all", "--jobs", "3",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV, start_new_session=True,
                            preexec_fn=default_sigint)
    wait_until(lambda: len(children(proc.pid)) >= 3 or proc.poll() is not None, 120)
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.5)  # the replays are under way
    return proc, children(proc.pid)


def test_ctrl_c_cancels_running_replays_promptly_with_one_line() -> None:
    proc, workers = start_matrix()
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert took < 5.0, f"took {took:.1f} s to stop"
    assert err.splitlines()[-1] == INTERRUPTED
    assert "Traceback" not in err and out == ""
    wait_until(lambda: not alive(workers), 5)


def test_sigterm_to_the_parent_takes_its_workers_with_it() -> None:
    proc, workers = start_matrix()
    os.kill(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM
    wait_until(lambda: not alive(workers), 5)


def test_ctrl_c_while_the_command_starts_is_one_line() -> None:
    proc = subprocess.Popen([*COMMAND, "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV, start_new_session=True,
                            preexec_fn=default_sigint)

    def importing_torch() -> bool:
        try:
            return "libtorch" in Path(f"/proc/{proc.pid}/maps").read_text()
        except OSError:
            return proc.poll() is not None

    wait_until(importing_torch, 60)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [line] = err.splitlines()
    assert line.startswith("error: interrupted (Ctrl-C)")


def test_the_ctrl_c_tests_hold_when_pytest_starts_with_sigint_ignored() -> None:
    """As under a CI runner that starts ``make test`` as a background job: SIGINT ignored."""
    here = Path(__file__).resolve()
    plugins = here.parents[1] / "policies" / "test_plugins.py"
    tests = [f"{here}::test_ctrl_c_while_the_command_starts_is_one_line",
             f"{plugins}::test_a_real_ctrl_c_while_a_plugin_imports_stops_the_load"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                       capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert r.returncode == 0, r.stdout[-3000:]
    assert "2 passed" in r.stdout


@pytest.mark.parametrize("args", [
    ["sweep", "-p", "lru,lfu", "-P", "convs=5", "--dry-run"],
    ["list", "--json"],
    ["show", "slru"],
])
def test_a_reader_that_left_is_exit_141_and_silent(args: list[str]) -> None:
    """``radix-evict ... | head -1`` where head is gone: exit 141 as for SIGPIPE, no message
    (not exit 1, which says the input was invalid, nor an empty ``error:`` line)."""
    proc = subprocess.Popen([*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first write: that write fails
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141, err
    assert b"error" not in err
