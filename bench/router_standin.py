"""Stand-in SGLang workers for the router exactness harness: record each request, hold it open.

sglang-router 0.3.2 registers an HTTP worker by probing ``GET /health``
(``src/core/steps/worker/local/detect_connection.rs:25``), then asks
``GET /server_info`` and ``GET /model_info`` for metadata
(``discover_metadata.rs:99, 137``, falling back to ``/get_server_info`` and
``/get_model_info``), and keeps probing ``/health`` while it runs. A worker
here answers those at once, and answers ``POST /generate`` only when the
harness releases that request: the harness, not timing, decides when each
response (and so each decrement of the router's load count) happens.

All workers live in one process, each on its own loopback port and thread
pool; ``Fleet.wait_arrival`` tells which worker a request reached.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Fleet"]

MODEL = "stand-in"
_INFO: dict[str, dict[str, Any]] = {
    "/server_info": {"model_path": MODEL, "served_model_name": MODEL, "tp_size": 1, "dp_size": 1},
    "/model_info": {"model_path": MODEL, "is_generation": True},
}
_INFO["/get_server_info"] = _INFO["/server_info"]
_INFO["/get_model_info"] = _INFO["/model_info"]


class Fleet:
    """``n`` stand-in workers on 127.0.0.1; what reached which, and a gate per request."""

    def __init__(self, n: int) -> None:
        self._cond = threading.Condition()
        self.arrived: dict[str, int] = {}  # rid -> worker index
        self._released: set[str] = set()
        self.unknown_paths: list[str] = []
        self.servers = [self._server(i) for i in range(n)]
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True)
                         for s in self.servers]
        for t in self._threads:
            t.start()

    @property
    def urls(self) -> list[str]:
        """The workers' base URLs, in index order."""
        return [f"http://127.0.0.1:{s.server_address[1]}" for s in self.servers]

    def _server(self, index: int) -> ThreadingHTTPServer:
        fleet = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: without TCP_NODELAY, Nagle's
            # algorithm holds the body until the router's delayed ACK (~40 ms a reply)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the router probes /health every few seconds."""

            def _reply(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path in ("/health", "/health_generate"):
                    self._reply(200, {})
                elif path in _INFO:
                    self._reply(200, _INFO[path])
                elif path == "/v1/models":
                    self._reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                else:
                    fleet.unknown_paths.append(f"GET {path}")
                    self._reply(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path.split("?")[0] != "/generate":
                    fleet.unknown_paths.append(f"POST {self.path}")
                    self._reply(404, {"error": "not found"})
                    return
                rid = str(body.get("rid"))
                fleet._arrive(rid, index)
                fleet._hold(rid)
                self._reply(200, {"text": "", "meta_info": {"id": rid, "finish_reason": "stop"}})

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def _arrive(self, rid: str, index: int) -> None:
        with self._cond:
            if rid in self.arrived:
                raise RuntimeError(f"request {rid} reached a worker twice (a router retry?)")
            self.arrived[rid] = index
            self._cond.notify_all()

    def _hold(self, rid: str) -> None:
        with self._cond:
            self._cond.wait_for(lambda: rid in self._released)

    def wait_arrival(self, rid: str, timeout: float = 30.0) -> int:
        """The index of the worker ``rid`` reached (waits for it)."""
        with self._cond:
            if not self._cond.wait_for(lambda: rid in self.arrived, timeout=timeout):
                raise TimeoutError(f"request {rid} reached no worker within {timeout} s")
            return self.arrived[rid]

    def release(self, rid: str) -> None:
        """Let the worker holding ``rid`` answer it."""
        with self._cond:
            self._released.add(rid)
            self._cond.notify_all()

    def close(self) -> None:
        """Release everything and stop the servers."""
        with self._cond:
            self._released.update(self.arrived)
            self._cond.notify_all()
        for s in self.servers:
            s.shutdown()
            s.server_close()
