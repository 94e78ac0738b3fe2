"""Does radix-evict's ``cache_aware`` router partition requests as sglang-router 0.3.2 does?

    python bench/router_exactness.py                       # the goal's grid (2,000 requests)
    python bench/router_exactness.py --stream mooncake --workers 4 --in-flight 8 -n 300

For each cell it starts the real router (``python -m sglang_router.launch_router
--policy cache_aware``, from the venv ``make router-env`` builds in
``build/router-env``; nothing is installed here) on 127.0.0.1 over N stand-in
workers (``bench/router_standin.py``), sends the stream as text, keeps K
requests in flight and answers the oldest before sending the next, so the
router's load counts are the same on every run. Then it drives
``CacheAwareRouter`` with the same texts in the same pattern (``on_finish`` for
the oldest, then ``route`` for the next) and compares the partitions: which
requests shared a worker, worker labels aside (labels renumbered by first
appearance).

Streams: ``mooncake`` renders each request's block hashes, ``chat`` each prompt
token of radix-evict's built-in ``chat`` workload, as one fixed-width word, so a
shared block (token) prefix is a shared text prefix.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from router_standin import Fleet

from radix_evict.sim.fleet.router import RoutedRequest
from radix_evict.sim.fleet.routers.cache_aware import CacheAwareConfig, CacheAwareRouter

ROOT = Path(__file__).resolve().parent.parent
ROUTER_ENV = ROOT / "build" / "router-env"
TRACE = ROOT.parent / "shared" / "traces" / "mooncake_conversation_trace.jsonl"
INSTALL = "make router-env  (python3 -m venv build/router-env && " \
          "build/router-env/bin/pip install sglang-router==0.3.2)"


def router_python(env: Path = ROUTER_ENV) -> Path | None:
    """The router venv's python when sglang-router is installed there, else None."""
    py = env / "bin" / "python"
    if not py.exists():
        return None
    probe = subprocess.run([str(py), "-c", "import sglang_router"], capture_output=True)
    return py if probe.returncode == 0 else None


def mooncake_texts(n: int, path: Path = TRACE) -> list[str]:
    """The first ``n`` trace requests, each block hash as a 7-digit word."""
    out = []
    with path.open() as f:
        for line in islice(f, n):
            out.append("".join(f"{h:07d} " for h in json.loads(line)["hash_ids"]))
    return out


def chat_texts(n: int, seed: int = 0) -> list[str]:
    """The first ``n`` prompts of the ``chat`` workload, each token as a 5-digit word."""
    from radix_evict.sim.workloads import get_workload

    reqs = islice(get_workload("chat", seed=seed).requests(), n)
    return ["".join(f"{t:05d} " for t in r.prompt.tolist()) for r in reqs]


def canonical(labels: Sequence[int]) -> list[int]:
    """Labels renumbered by first appearance: equal lists mean the same partition."""
    seen: dict[int, int] = {}
    return [seen.setdefault(x, len(seen)) for x in labels]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, json.loads(body) if body else None
    finally:
        conn.close()


class RealRouter:
    """sglang-router 0.3.2 as a subprocess over a stand-in fleet (a context manager)."""

    def __init__(self, python: Path, workers: int, extra: Sequence[str] = ()) -> None:
        self.fleet = Fleet(workers)
        self.port = _free_port()
        self.metrics_port = _free_port()
        cmd = [str(python), "-m", "sglang_router.launch_router", "--host", "127.0.0.1",
               "--port", str(self.port), "--policy", "cache_aware",
               "--prometheus-port", str(self.metrics_port), "--log-level", "warn",
               "--worker-urls", *self.fleet.urls, *extra]
        self.log = open(os.devnull, "w")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(workers)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, workers: int, timeout: float = 60.0) -> None:
        """Until the router reports every worker healthy (``GET /readiness``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sglang-router exited with code {self.proc.returncode}")
            try:
                code, body = _get(self.port, "/readiness")
                if code == 200 and body.get("healthy_workers") == workers:
                    return
            except (OSError, ValueError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        raise TimeoutError(f"sglang-router not ready with {workers} workers in {timeout} s")

    def active(self) -> int:
        """The router's summed per-worker load, from its ``smg_worker_requests_active`` gauge."""
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                   if line.startswith("smg_worker_requests_active{"))

    def settle(self, expected: int, timeout: float = 10.0) -> None:
        """Wait until the router's load counts add up to ``expected``.

        The client has the whole response before the router drops the request's
        load guard (``worker.rs:1133-1139``, run when the response body is
        dropped); routing the next request before that would see a stale load.
        The gauge is set right after each change of the count (``worker.rs:670-673``).
        """
        deadline = time.monotonic() + timeout
        while (seen := self.active()) != expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"router load {seen}, expected {expected}")
            time.sleep(0.001)

    def _post(self, rid: str, text: str, errors: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            body = json.dumps({"text": text, "rid": rid,
                               "sampling_params": {"max_new_tokens": 1}})
            conn.request("POST", "/generate", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors.append(f"{rid}: HTTP {resp.status}")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{rid}: {exc}")
        finally:
            conn.close()

    def run(self, texts: Sequence[str], in_flight: int) -> list[int]:
        """The worker index each text reached, K in flight, the oldest answered first."""
        out: list[int] = []
        errors: list[str] = []
        pending: deque[tuple[str, threading.Thread]] = deque()
        for i, text in enumerate(texts):
            if len(pending) == in_flight:
                rid, thread = pending.popleft()
                self.fleet.release(rid)
                thread.join()  # its response is read ...
                self.settle(len(pending))  # ... and the router's load count is down
            rid = f"r{i}"
            thread = threading.Thread(target=self._post, args=(rid, text, errors))
            thread.start()
            out.append(self.fleet.wait_arrival(rid))
            pending.append((rid, thread))
        for rid, thread in pending:
            self.fleet.release(rid)
            thread.join()
        if errors:
            raise RuntimeError(f"{len(errors)} requests failed, first: {errors[0]}")
        return out

    def close(self) -> None:
        """Stop the router, then the workers."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.fleet.close()

    def __enter__(self) -> RealRouter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def simulate(texts: Sequence[str], workers: int, in_flight: int,
             config: CacheAwareConfig | None = None) -> tuple[list[int], int]:
    """``CacheAwareRouter``'s choices for the same texts in the same in-flight pattern.

    Also how many requests it routed on the unbalanced branch (shortest queue).
    """
    router = CacheAwareRouter(config or CacheAwareConfig(), replicas=workers)
    requests = [RoutedRequest(rid=i, arrival=0.0, key=t, session=None,
                              prompt_tokens=len(t), output_tokens=1)
                for i, t in enumerate(texts)]
    out: list[int] = []
    unbalanced = 0
    pending: deque[int] = deque()
    for req in requests:
        if len(pending) == in_flight:
            old = pending.popleft()
            router.on_finish(requests[old], out[old])
        unbalanced += router.unbalanced()
        out.append(router.route(req, ()))
        pending.append(req.rid)
    return out, unbalanced


@dataclass(frozen=True)
class Cell:
    """One comparison: stream, workers, in flight, requests; the verdict and where it broke."""

    stream: str
    workers: int
    in_flight: int
    requests: int
    same: bool
    first_difference: int | None
    workers_used: int
    unbalanced: int  # requests the model routed by shortest queue (load unbalanced)
    seconds: float


def router_args(config: CacheAwareConfig) -> list[str]:
    """The launcher's options for the settings the partition depends on (eviction aside)."""
    return ["--cache-threshold", str(config.cache_threshold),
            "--balance-abs-threshold", str(config.balance_abs_threshold),
            "--balance-rel-threshold", str(config.balance_rel_threshold)]


def compare(python: Path, stream: str, texts: Sequence[str], workers: int,
            in_flight: int, config: CacheAwareConfig | None = None) -> Cell:
    """Run the real router and the model on ``texts`` with the same settings; the verdict."""
    config = config or CacheAwareConfig()
    t0 = time.monotonic()
    with RealRouter(python, workers, router_args(config)) as real:
        got = canonical(real.run(texts, in_flight))
    labels, unbalanced = simulate(texts, workers, in_flight, config)
    want = canonical(labels)
    diff = next((i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b), None)
    return Cell(stream, workers, in_flight, len(texts), diff is None, diff,
                len(set(got)), unbalanced, round(time.monotonic() - t0, 1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", action="append", choices=["mooncake", "chat"])
    parser.add_argument("--workers", type=int, action="append")
    parser.add_argument("--in-flight", type=int, action="append")
    parser.add_argument("-n", "--requests", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="one JSON object per cell")
    defaults = CacheAwareConfig()
    parser.add_argument("--cache-threshold", type=float, default=defaults.cache_threshold)
    parser.add_argument("--balance-abs-threshold", type=int,
                        default=defaults.balance_abs_threshold,
                        help="below the in-flight count, the unbalanced branch is exercised")
    parser.add_argument("--balance-rel-threshold", type=float,
                        default=defaults.balance_rel_threshold)
    args = parser.parse_args(argv)
    config = CacheAwareConfig(cache_threshold=args.cache_threshold,
                              balance_abs_threshold=args.balance_abs_threshold,
                              balance_rel_threshold=args.balance_rel_threshold)
    python = router_python()
    if python is None:
        print(f"sglang-router is not installed in {ROUTER_ENV}; build it with: {INSTALL}",
              file=sys.stderr)
        return 2
    streams: dict[str, Callable[[int], list[str]]] = {"mooncake": mooncake_texts,
                                                     "chat": chat_texts}
    failed = 0
    for stream in args.stream or ["mooncake", "chat"]:
        texts = streams[stream](args.requests)
        for workers in args.workers or [2, 4, 8]:
            for k in args.in_flight or [1, 8, 32]:
                cell = compare(python, stream, texts, workers, k, config)
                failed += not cell.same
                if args.json:
                    print(json.dumps(cell.__dict__), flush=True)
                else:
                    verdict = "same" if cell.same else f"DIFFERS at {cell.first_difference}"
                    print(f"{stream:9s} workers={workers} in_flight={k:<3d} "
                          f"requests={cell.requests} used={cell.workers_used} "
                          f"unbalanced={cell.unbalanced} "
                          f"{verdict} ({cell.seconds} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
