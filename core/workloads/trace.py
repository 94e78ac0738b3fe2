"""Mooncake traces: one JSON request a line, replayed with the harness's timing.

A line is ``{"timestamp": ms, "input_length": n, "output_length": m,
"hash_ids": [...]}``. Block ``h`` holds tokens ``h*block_size + 0..block_size-1``
and a prompt is its blocks' concatenation cut to ``input_length``, so requests
that share leading hash ids share a token prefix. Output tokens are fresh ids,
never repeated, so outputs are never hit. Every request has priority 0.
Requests arrive at their timestamps and finish after the service time of
:func:`radix_evict.workloads.base.service_time`.

Every line is checked when the file is read; a bad one raises TraceError
naming the file, the 1-based line number and what is wrong.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from radix_evict.errors import RadixEvictError
from radix_evict.workloads.base import (
    Event,
    Request,
    Workload,
    WorkloadParams,
    check_integers,
    check_non_negative,
    check_positive,
)

DEFAULT_POOL_TOKENS = 4_000_000
FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


class TraceError(RadixEvictError, ValueError):
    """A trace file that cannot be replayed; says which file, which line, what is wrong."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class TraceFileError(TraceError):
    """The trace file itself cannot be read (missing, a directory, no permission)."""


@dataclass(frozen=True, kw_only=True)
class TraceParams(WorkloadParams):
    """How a Mooncake trace is read."""

    block_size: int = field(default=512, metadata={"doc": "tokens per hash_id block"})
    limit: int = field(default=0, metadata={"doc": "read only the first N requests (0 = all)"})

    def validate(self) -> None:
        super().validate()
        check_integers(self, "block_size", "limit")
        check_positive(self, "block_size")
        check_non_negative(self, "limit")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _parse_line(path: str, n: int, line: str, block: int) -> tuple[float, int, int, list[int]]:
    """One validated record: (timestamp ms, input_length, output_length, hash_ids)."""
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise TraceError(path, n, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(rec, dict):
        raise TraceError(path, n, f"expected a JSON object, got {type(rec).__name__}")
    missing = [k for k in FIELDS if k not in rec]
    if missing:
        raise TraceError(
            path, n, f"missing field(s) {', '.join(missing)} (need {', '.join(FIELDS)})"
        )
    ts = rec["timestamp"]
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise TraceError(path, n, f"timestamp must be a number of milliseconds, got {ts!r}")
    if ts < 0:
        raise TraceError(path, n, f"timestamp must be >= 0, got {ts!r}")
    for key in ("input_length", "output_length"):
        v = rec[key]
        if not _is_int(v):
            raise TraceError(path, n, f"{key} must be an integer, got {v!r}")
        if v < 0:
            raise TraceError(path, n, f"{key} must be >= 0, got {v}")
    il, ol, hids = rec["input_length"], rec["output_length"], rec["hash_ids"]
    if not isinstance(hids, list):
        raise TraceError(path, n, f"hash_ids must be a list of integers, got {type(hids).__name__}")
    for i, h in enumerate(hids):
        if not _is_int(h):
            raise TraceError(path, n, f"hash_ids[{i}] must be an integer, got {h!r}")
        if h < 0:
            raise TraceError(path, n, f"hash_ids[{i}] must be >= 0, got {h}")
    blocks = -(-il // block)
    if len(hids) > blocks:
        raise TraceError(
            path,
            n,
            f"hash_ids has {len(hids)} blocks but input_length {il} allows at most {blocks} "
            f"(ceil({il} / {block}))",
        )
    if len(hids) < blocks:
        raise TraceError(
            path, n, f"input_length {il} needs {blocks} blocks of {block}, hash_ids has {len(hids)}"
        )
    return float(ts), il, ol, hids


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of a UTF-8 file; read errors become TraceError."""
    try:
        with open(path, encoding="utf-8") as fh:
            yield from enumerate(fh, 1)
    except OSError as e:
        raise TraceFileError(path, None, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise TraceError(path, None, f"not UTF-8 text ({e.reason})") from None


class MooncakeTrace(Workload):
    """A Mooncake trace as a workload (events as in ``sglang_bench.MooncakeTrace``).

    Prompts are built when they arrive, so a 145M-token trace costs only its
    hash ids in memory. Ties in time: arrivals in file order, then finishes in
    the order they were scheduled.
    """

    def __init__(self, path: str | os.PathLike[str], params: TraceParams | None = None) -> None:
        self.params = p = params or TraceParams()
        self.path = os.fspath(path)
        self.name = f"trace:{os.path.basename(self.path)}"
        self.seed = None
        self.default_pool_tokens = DEFAULT_POOL_TOKENS
        self.block = p.block_size
        self.rows: list[tuple[float, int, int, npt.NDArray[np.int64]]] = []
        for n, line in _lines(self.path):
            if not line.strip():
                continue
            ts, il, ol, hids = _parse_line(self.path, n, line, self.block)
            self.rows.append((ts, il, ol, np.asarray(hids, dtype=np.int64)))
            if p.limit and len(self.rows) >= p.limit:
                break
        if not self.rows:
            raise TraceError(self.path, None, "no requests")
        max_hash = max((int(h.max()) for *_, h in self.rows if len(h)), default=-1)
        # Output ids start past every prompt token id; each request gets its own range.
        self.out_base = (max_hash + 1) * self.block
        self.out_off = np.concatenate([[0], np.cumsum([r[2] for r in self.rows])])[:-1].astype(
            np.int64
        )
        self._offs = np.arange(self.block, dtype=np.int64)

    @property
    def num_requests(self) -> int:
        return len(self.rows)

    def request(self, i: int, arrival: float | None = None) -> Request:
        """Request ``i`` (0-based, file order) with its tokens built."""
        ts, il, ol, hids = self.rows[i]
        full = np.empty(il + ol, dtype=np.int64)
        full[:il] = (hids[:, None] * self.block + self._offs).reshape(-1)[:il]
        start = self.out_base + int(self.out_off[i])
        full[il:] = np.arange(start, start + ol, dtype=np.int64)
        t = ts / 1000.0 if arrival is None else arrival
        return Request(f"r{i}", full[:il], full[il:], 0, t, i, 0, "trace", full)

    def events(self) -> Iterator[Event]:
        heap: list[tuple[float, int, int, int]] = [
            (r[0] / 1000.0, i, 0, i) for i, r in enumerate(self.rows)
        ]
        heapq.heapify(heap)
        seq = len(self.rows)
        live: dict[int, Request] = {}
        while heap:
            t, _, is_finish, i = heapq.heappop(heap)
            if not is_finish:
                req = self.request(i, t)
                live[i] = req
                yield Event(t, "arrive", req)
                done = t + self.service_time(len(req.prompt), len(req.output))
                heapq.heappush(heap, (done, seq, 1, i))
                seq += 1
            else:
                yield Event(t, "finish", live.pop(i))

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        """Tokens past the longest block prefix any earlier request had (infinite-cache misses)."""
        seen: dict[tuple[int, int], int] = {}
        out = np.empty(len(self.rows), dtype=np.int64)
        for i, (_, il, _, hids) in enumerate(self.rows):
            node = matched = 0
            for h in hids.tolist():
                nxt = seen.get((node, h))
                if nxt is None:  # after the first miss every later block is new too
                    nxt = seen[(node, h)] = len(seen) + 1
                else:
                    matched += 1
                node = nxt
            out[i] = il - min(matched * self.block, il)
        return out, "trace requests (prompt tokens past the longest block prefix seen before)"

    def describe(self) -> dict[str, Any]:
        ts = [r[0] for r in self.rows]
        return {
            **super().describe(),
            "path": os.path.abspath(self.path),
            "block_size": self.block,
            "duration_s": (max(ts) - min(ts)) / 1000.0,
            "prompt_tokens": int(sum(r[1] for r in self.rows)),
            "output_tokens": int(sum(r[2] for r in self.rows)),
            "unique_blocks": len(np.unique(np.concatenate([r[3] for r in self.rows]))),
        }


def load_trace(
    path: str | os.PathLike[str], *, block_size: int = 512, limit: int = 0, **params: Any
) -> MooncakeTrace:
    """Read and validate a Mooncake trace (raises TraceError on the first bad line)."""
    return MooncakeTrace(path, TraceParams(block_size=block_size, limit=limit, **params))
