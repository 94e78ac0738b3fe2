"""Mooncake traces: one JSON request a line, replayed with the harness's timing.

A line is ``{"timestamp": ms, "input_length": n, "output_length": m,
"hash_ids": [...]}``. Block ``h`` holds tokens ``h*block_size + 0..block_size-1``
and a prompt is its blocks' concatenation cut to ``input_length``, so requests
that share leading hash ids share a token prefix. Output tokens are fresh ids,
never repeated, so outputs are never hit. Every request has priority 0.
Requests arrive at their timestamps and finish after the service time of
:func:`radix_evict.sim.workloads.base.service_time`.

Every line is checked when the file is read; a bad one raises TraceError
naming the file, the 1-based line number and what is wrong (a request without
a prompt, ``input_length`` 0, included: :func:`check_request_length`).
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

from radix_evict.cache.args import is_integer
from radix_evict.cache.context import RequestContext
from radix_evict.errors import RadixEvictError
from radix_evict.inputs import TRACE_BYTES, InputFileError, open_lines
from radix_evict.sim.workloads.base import (
    Event,
    Request,
    Workload,
    WorkloadParams,
    check_integers,
    check_non_negative,
    check_positive,
)

DEFAULT_POOL_TOKENS = 4_000_000
# The longest request (input + output tokens) a replay takes: its token ids are
# one int64 array (512 MiB at this length), and no model serves a longer context.
MAX_REQUEST_TOKENS = 2**26
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


def _parse_line(path: str, n: int, line: str, block: int) -> tuple[float, int, int, list[int]]:
    """One validated record: (timestamp ms, input_length, output_length, hash_ids)."""
    rec = json_record(path, n, line, FIELDS)
    ts = rec["timestamp"]
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise TraceError(path, n, f"timestamp must be a number of milliseconds, got {ts!r}")
    if ts < 0:
        raise TraceError(path, n, f"timestamp must be >= 0, got {ts!r}")
    for key in ("input_length", "output_length"):
        v = rec[key]
        if not is_integer(v):
            raise TraceError(path, n, f"{key} must be an integer, got {v!r}")
        if v < 0:
            raise TraceError(path, n, f"{key} must be >= 0, got {v}")
    il, ol, hids = rec["input_length"], rec["output_length"], rec["hash_ids"]
    check_request_length(path, n, il, ol)
    check_hash_ids(path, n, hids, il, block)
    return float(ts), il, ol, hids


def check_request_length(path: str, n: int, il: int, ol: int) -> None:
    """Refuse a request without a prompt, or longer than a replay takes (its token arrays
    would not fit).

    An empty prompt is refused here, for every format, rather than when a replay
    reaches it: a server computes the first output token from one prompt token
    at least, so the timed replay cannot serve it, and in a token replay it has
    nothing to hit or to cache (issue #36).
    """
    if il < 1:
        raise TraceError(path, n, f"input_length must be >= 1, got {il}: a request needs a "
                         "prompt (a server computes the first output token from it); drop "
                         "the line")
    if il + ol > MAX_REQUEST_TOKENS:
        raise TraceError(path, n, f"input_length {il:,} + output_length {ol:,} is more than "
                         f"{MAX_REQUEST_TOKENS:,} tokens, the longest request a replay takes")


def check_hash_ids(path: str, n: int, hids: Any, il: int, block: int) -> None:
    """Line ``n``'s ``hash_ids``: integers >= 0, token ids in int64, one per block of ``il``."""
    if not isinstance(hids, list):
        raise TraceError(path, n, f"hash_ids must be a list of integers, got {type(hids).__name__}")
    # Fast check in C (map, min); the loop finds which id is bad, and why.
    if not (set(map(type, hids)) <= {int} and (not hids or min(hids) >= 0)):
        for i, h in enumerate(hids):
            if not is_integer(h):
                raise TraceError(path, n, f"hash_ids[{i}] must be an integer, got {h!r}")
            if h < 0:
                raise TraceError(path, n, f"hash_ids[{i}] must be >= 0, got {h}")
    # Block h holds token ids h*block ..: they must stay in the int64 range.
    limit = 2**63 // block
    if hids and max(hids) >= limit:
        i = next(i for i, h in enumerate(hids) if h >= limit)
        raise TraceError(path, n, f"hash_ids[{i}] = {hids[i]} is too large: with block_size "
                         f"{block} its token ids pass the int64 range (hash ids must be < "
                         f"{limit:,})")
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


def json_record(path: str, n: int, line: str, fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """Line ``n`` of a JSON-lines trace as an object holding ``fields``; else TraceError.

    Every trace format reads its lines through this, so they all word a bad
    line the same way.
    """
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise TraceError(path, n, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(rec, dict):
        raise TraceError(path, n, f"expected a JSON object, got {type(rec).__name__}")
    missing = [k for k in fields if k not in rec]
    if missing:
        raise TraceError(
            path, n, f"missing field(s) {', '.join(missing)} (need {', '.join(fields)})"
        )
    return rec


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of a UTF-8 trace, read through :mod:`radix_evict.inputs`.

    A regular file of at most TRACE_BYTES (a FIFO or ``/dev/zero`` would block
    or never end); a file that cannot be read is a TraceFileError, text that
    is not UTF-8 a TraceError.
    """
    try:
        yield from enumerate(open_lines(path, limit=TRACE_BYTES, what="a trace"), 1)
    except InputFileError as e:
        if e.type == "not_utf8":
            raise TraceError(path, None, e.reason) from None
        raise TraceFileError(path, None, e.reason) from None


def _token_runs(
    rows: list[tuple[float, int, int, npt.NDArray[np.int64]]],
    hash_ids: npt.NDArray[np.int64],
    block: int,
) -> tuple[list[int], list[int], list[int]]:
    """Every request's prompt as runs of consecutive hash ids, i.e. of consecutive tokens.

    ``hash_ids`` is every row's ids joined. Returns (at, pos, val) as lists (a
    request's loop reads them as Python ints): request ``i`` has runs
    ``at[i]:at[i+1]``; run ``r`` starts at prompt position ``pos[r]`` with token
    ``val[r]`` and continues one by one up to the next run (or input_length).
    """
    lens = np.fromiter((len(r[3]) for r in rows), dtype=np.int64, count=len(rows))
    first = np.cumsum(lens) - lens  # each row's first block in hash_ids
    starts = np.ones(len(hash_ids), dtype=bool)
    starts[1:] = hash_ids[1:] != hash_ids[:-1] + 1
    starts[first[lens > 0]] = True
    run = np.flatnonzero(starts)
    row_of = np.repeat(np.arange(len(rows)), lens)[run]
    pos = (run - first[row_of]) * block
    at = np.searchsorted(run, np.append(first, len(hash_ids)))
    return at.tolist(), pos.tolist(), (hash_ids[run] * block).tolist()


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
        self._hash_ids = np.concatenate([r[3] for r in self.rows])
        max_hash = int(self._hash_ids.max()) if len(self._hash_ids) else -1
        if (max_hash + 1) * self.block + sum(r[2] for r in self.rows) > 2**63:
            raise TraceError(
                self.path,
                None,
                f"hash ids up to {max_hash} with block_size {self.block} give token ids "
                "past the int64 range",
            )
        # Output ids start past every prompt token id; each request gets its own range.
        self.out_base = (max_hash + 1) * self.block
        self.out_off = np.concatenate([[0], np.cumsum([r[2] for r in self.rows])])[:-1].astype(
            np.int64
        )
        self._out_start: list[int] = (self.out_base + self.out_off).tolist()
        runs = _token_runs(self.rows, self._hash_ids, self.block)
        self._run_at, self._run_pos, self._run_val = runs
        longest = max(max(r[1] for r in self.rows), max(r[2] for r in self.rows))
        self._iota = np.arange(longest, dtype=np.int64)
        # Arrivals in event order: by time, ties in file order.
        self._arrivals = sorted((r[0] / 1000.0, i) for i, r in enumerate(self.rows))

    @property
    def num_requests(self) -> int:
        return len(self.rows)

    def request(self, i: int, arrival: float | None = None) -> Request:
        """Request ``i`` (0-based, file order) with its tokens built.

        Each run of consecutive hash ids is one ascending range of token ids, so
        the prompt is written run by run (a trace request has ~3 runs) and the
        output after it, straight into one array: no temporaries, a single
        write pass over its ~100 KB, which is most of what it costs in a replay
        (the cache operations in between keep evicting it from the CPU caches).
        """
        ts, il, ol, _ = self.rows[i]
        full = np.empty(il + ol, dtype=np.int64)
        iota, pos, val = self._iota, self._run_pos, self._run_val
        r, end = self._run_at[i], self._run_at[i + 1]
        while r < end:
            a, v = pos[r], val[r]
            r += 1
            b = pos[r] if r < end else il  # the last run is cut to input_length
            np.add(iota[: b - a], v, out=full[a:b])
        np.add(iota[:ol], self._out_start[i], out=full[il:])
        t = ts / 1000.0 if arrival is None else arrival
        return Request(f"r{i}", full[:il], full[il:], 0, t, i, 0, "trace", full)

    def events(self) -> Iterator[Event]:
        """The harness's one-heap event order, with only the finishes in a heap.

        The harness queues every arrival as ``(time, i)`` and every finish as
        ``(time, seq)`` with seq past every i, so at equal times arrivals come
        first: merging the sorted arrivals with a heap of the (few) requests in
        flight gives the same order without 12k arrivals in the heap.
        """
        finishes: list[tuple[float, int, int]] = []  # (time, seq, i)
        live: dict[int, Request] = {}
        service = self.service_time
        pop, push = heapq.heappop, heapq.heappush
        for seq, (t, i) in enumerate(self._arrivals):
            while finishes and finishes[0][0] < t:
                done, _, j = pop(finishes)
                yield Event(done, "finish", live.pop(j))
            req = self.request(i, t)
            live[i] = req
            yield Event(t, "arrive", req)
            push(finishes, (t + service(len(req.prompt), len(req.output)), seq, i))
        while finishes:
            done, _, j = pop(finishes)
            yield Event(done, "finish", live.pop(j))

    def context_of(self, req: Request) -> RequestContext:
        """A Mooncake record carries its timestamp and lengths, no session: only those."""
        return RequestContext(arrival=req.arrival, output_len=len(req.output), rid=req.rid)

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        """Tokens past the longest block prefix any earlier request had (infinite-cache misses).

        Depth by depth over all requests at once (numpy, ~3x faster than a trie
        walk in Python): a block prefix's id at depth k is the distinct pair
        (its id at depth k - 1, hash id k), and a request has matched depth k
        when an earlier request has the same prefix id there.
        """
        rows = self.rows
        n = len(rows)
        lens = np.fromiter((len(r[3]) for r in rows), dtype=np.int64, count=n)
        first = np.cumsum(lens) - lens  # each request's first block in _hash_ids
        hids = self._hash_ids
        if len(hids) and int(hids.max()) >= 2**62 // max(n, 1):  # keep the pair keys in int64
            hids = np.unique(hids, return_inverse=True)[1].astype(np.int64)
        span = int(hids.max()) + 1 if len(hids) else 1
        matched = np.zeros(n, dtype=np.int64)
        prefix = np.zeros(n, dtype=np.int64)  # prefix id at the previous depth (0: empty)
        alive = np.flatnonzero(lens > 0)  # requests with a block at this depth, in file order
        depth = 0
        while len(alive):
            key = prefix[alive] * span + hids[first[alive] + depth]
            _, at, ids = np.unique(key, return_index=True, return_inverse=True)
            matched[alive] += alive[at[ids]] < alive  # first holder of the prefix is earlier
            prefix[alive] = ids
            depth += 1
            alive = alive[lens[alive] > depth]
        il = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
        out = il - np.minimum(matched * self.block, il)
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
            "unique_blocks": _count_distinct(self._hash_ids),
        }


def _count_distinct(values: npt.NDArray[np.int64]) -> int:
    """len(np.unique(values)), ~15x faster: numpy 2's hash-based unique is slow on ints."""
    s = np.sort(values)
    return int(len(s) > 0) + int(np.count_nonzero(s[1:] != s[:-1]))


def load_trace(
    path: str | os.PathLike[str], *, block_size: int = 512, limit: int = 0, **params: Any
) -> MooncakeTrace:
    """Read and validate a Mooncake trace (raises TraceError on the first bad line)."""
    return MooncakeTrace(path, TraceParams(block_size=block_size, limit=limit, **params))
