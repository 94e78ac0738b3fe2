"""The Ray executor: each cell a Ray task on an existing cluster, rows streamed back.

Each workload goes into the object store once (``ray.put``) and every task
of it takes the reference, so a trace crosses the network once per node,
not once per cell. Tasks ask for one CPU each and are not retried: a cell
that fails, or whose worker dies, comes back as an error row. Ray is
imported only here, and only when a sweep asks for it (``radix-evict[ray]``).
The cluster's workers need radix-evict (and any policy plugin the grid uses)
installed in their Python environment.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from radix_evict.errors import RadixEvictError
from radix_evict.sim.parallel import ProgressFn
from radix_evict.sim.sweep.curve_groups import Task, run_task, task_error_rows
from radix_evict.sim.sweep.rows import error_text
from radix_evict.sim.sweep.sources import WorkloadKey
from radix_evict.sim.workloads import Workload

INSTALL_HINT = "install the Ray extra: pip install 'radix-evict[ray]'"
LOCAL = "local"  # --ray local: start a private single-machine Ray instead of joining one
WAIT_S = 0.5
# How long --ray HOST:PORT may take to accept a connection and answer gRPC's first frame;
# Ray's own attempts at an address where nothing listens go on for minutes, printing its
# log lines meanwhile.
PROBE_TIMEOUT_S = 5.0


class RayUnavailableError(RadixEvictError, ImportError):
    """Ray is not installed."""


class RayConnectionError(RadixEvictError, ConnectionError):
    """The Ray cluster named by ``--ray`` cannot be reached."""


# Ray reads the session name from a new cluster's GCS with 20 one-second retries: an
# address that accepts connections but is no Ray (a proxy) took 23 s to fail. Three
# retries still give a live cluster seconds; set the variable to choose otherwise.
GET_RETRIES_ENV = "RAY_NUM_REDIS_GET_RETRIES"
GET_RETRIES = "3"
# A client's HTTP/2 connection preface and an empty SETTINGS frame: a gRPC server (Ray's
# GCS, the Ray Client server) answers it at once with its own SETTINGS frame.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def import_ray() -> Any:
    """Ray, imported on first use (with seconds, not ~20 s, of retries to find a cluster)."""
    if "ray" not in sys.modules:
        os.environ.setdefault(GET_RETRIES_ENV, GET_RETRIES)
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(f"--ray needs Ray ({exc}); {INSTALL_HINT}") from None
    return ray


def cell_task(task: Task, workload: Workload) -> list[dict[str, Any]]:
    """What a Ray worker runs: the same replay (or curve pass) and rows as a local worker."""
    import torch

    torch.set_num_threads(1)  # one CPU per task, as the task asked for
    return run_task(task, workload)


@contextlib.contextmanager
def connected(ray: Any, address: str | None) -> Iterator[None]:
    """Use the Ray this process already joined, or join ``address`` (and leave it after)."""
    if ray.is_initialized():
        yield
        return
    kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
    if address not in (None, LOCAL):
        kwargs["address"] = address
        probe(address)
    try:
        ray.init(**kwargs)
    except Exception as exc:  # ConnectionError, a wrong address, a version mismatch
        raise RayConnectionError(f"--ray {address}: cannot connect: {error_text(exc)}"
                                 ) from None
    try:
        yield
    finally:
        ray.shutdown()


def probe(address: str) -> None:
    """Fail fast, naming the address, where nothing answers at ``[ray://]HOST:PORT``.

    Other addresses (``auto``) are left to Ray.
    """
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    hint = "is the cluster's head node up (ray start --head) and the address its GCS port?"
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S) as conn:
            conn.sendall(H2_PREFACE)
            answer = conn.recv(9)
    except TimeoutError:
        raise RayConnectionError(
            f"--ray {address}: cannot connect: nothing answers at {host}:{port} within "
            f"{PROBE_TIMEOUT_S:g} s; {hint}") from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise RayConnectionError(
            f"--ray {address}: cannot connect: nothing answers at {host}:{port} ({why}); {hint}"
        ) from None
    if not answer:
        raise RayConnectionError(
            f"--ray {address}: cannot connect: {host}:{port} closed the connection without "
            f"answering as a Ray cluster does; {hint}")


def run_ray(
    cells: Sequence[Task],
    workloads: Mapping[WorkloadKey, Workload],
    *,
    address: str | None = "auto",
    progress: ProgressFn | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows of ``cells`` as their tasks finish on the cluster at ``address``.

    ``address``: ``auto`` (the cluster this machine belongs to, or RAY_ADDRESS),
    ``HOST:PORT`` or ``ray://HOST:PORT``, or ``local`` for a private Ray on
    this machine; if this process already called ``ray.init``, that Ray is
    used. Stopping the iteration (or Ctrl-C) cancels the tasks still queued
    or running. ``progress`` counts requests of the finished cells. A CurveGroup
    among ``cells`` is one task (one curve pass), a row per cell it holds.
    """
    ray = import_ray()
    with connected(ray, address):
        task = ray.remote(num_cpus=1, max_retries=0)(cell_task)
        refs = {key: ray.put(wl) for key, wl in workloads.items()
                if any(c.workload_key == key for c in cells)}
        pending = {task.remote(c, refs[c.workload_key]): i for i, c in enumerate(cells)}
        total = sum(workloads[c.workload_key].num_requests for c in cells)
        done = 0
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
                for ref in ready:
                    cell = cells[pending.pop(ref)]
                    try:
                        rows = ray.get(ref)
                    except Exception as exc:  # the worker died, or the task could not run
                        rows = task_error_rows(cell, _ray_error(exc))
                    done += workloads[cell.workload_key].num_requests
                    yield from rows
                if progress is not None:
                    progress(done, total)
        finally:
            for ref in pending:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)


def _ray_error(exc: BaseException) -> str:
    """Ray's exception, without the remote traceback it carries (the first line says it)."""
    text = error_text(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
