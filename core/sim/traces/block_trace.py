"""A trace of requests described by block hash ids, replayable as a workload.

Block ``h`` holds tokens ``h*block_size + 0..block_size-1``, so requests that
share leading hash ids share a token prefix (the convention of Mooncake's
traces). Two things differ from :class:`~radix_evict.sim.workloads.MooncakeTrace`:

* **Linked turns.** A request may name a parent (an earlier request of the
  same conversation). Its prompt then starts with the parent's whole token
  sequence, prompt and reply, exactly as the serving engine saw them; only the
  positions past that come from its own hash ids. So a returning turn can hit
  its previous reply, which a Mooncake replay (fresh output ids, never
  repeated) cannot.
* **No timestamps.** A trace without them (an offline batch) is replayed one
  request at a time: each arrives when the one before it finishes.

Outputs are fresh token ids, one range per request, past every prompt token.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from radix_evict.sim.workloads import Event, Request, TraceParams, Workload
from radix_evict.sim.workloads.trace import DEFAULT_POOL_TOKENS, TraceError


@dataclass(frozen=True, slots=True)
class BlockRow:
    """One request: arrival (seconds, None without timestamps), lengths, blocks, parent row."""

    arrival: float | None
    input_length: int
    output_length: int
    hash_ids: npt.NDArray[np.int64]
    parent: int = -1  # row index of the request whose tokens this prompt starts with


class BlockTrace(Workload):
    """Rows of a block-hash trace as a workload (see the module docstring)."""

    def __init__(self, path: str, fmt: str, rows: list[BlockRow], params: TraceParams,
                 info: dict[str, Any] | None = None) -> None:
        if not rows:
            raise TraceError(path, None, "no requests")
        self.path = path
        self.format = fmt
        self.rows = rows
        self.params = params
        self.block = params.block_size
        self.name = f"trace:{os.path.basename(path)}"
        self.seed = None
        self.default_pool_tokens = DEFAULT_POOL_TOKENS
        self.info = dict(info or {})
        max_hash = max((int(r.hash_ids.max()) for r in rows if len(r.hash_ids)), default=-1)
        out_total = sum(r.output_length for r in rows)
        if (max_hash + 1) * self.block + out_total > 2**63:
            raise TraceError(path, None, f"hash ids up to {max_hash} with block_size "
                             f"{self.block} give token ids past the int64 range")
        starts = np.cumsum([0] + [r.output_length for r in rows])[:-1]
        self._out_start = ((max_hash + 1) * self.block + starts).tolist()
        self.timed = rows[0].arrival is not None

    @property
    def num_requests(self) -> int:
        return len(self.rows)

    def tokens_of(self, i: int) -> npt.NDArray[np.int64]:
        """Request ``i``'s prompt and reply as one array (a parent's, for its children)."""
        chain = [i]
        while self.rows[chain[-1]].parent >= 0:
            chain.append(self.rows[chain[-1]].parent)
        full = np.empty(0, dtype=np.int64)
        for j in reversed(chain):  # oldest ancestor first: each turn extends the one before
            r = self.rows[j]
            own = np.empty(r.input_length + r.output_length, dtype=np.int64)
            inherited = min(len(full), r.input_length)
            own[:inherited] = full[:inherited]
            pos = np.arange(inherited, r.input_length, dtype=np.int64)
            own[inherited:r.input_length] = r.hash_ids[pos // self.block] * self.block + (
                pos % self.block
            )
            own[r.input_length:] = np.arange(r.output_length, dtype=np.int64) + self._out_start[j]
            full = own
        return full

    def request(self, i: int, arrival: float) -> Request:
        """Request ``i``; its session is its conversation's first turn (its root row)."""
        full = self.tokens_of(i)
        il = self.rows[i].input_length
        root, turn = i, 0
        while self.rows[root].parent >= 0:
            root, turn = self.rows[root].parent, turn + 1
        return Request(f"r{i}", full[:il], full[il:], 0, arrival, root, turn, "trace", full)

    def events(self) -> Iterator[Event]:
        if not self.timed:
            yield from self._sequential()
            return
        # As MooncakeTrace: arrivals by time (ties in file order), at equal times before
        # finishes; finishes in a heap of the requests in flight.
        arrivals = sorted((r.arrival or 0.0, i) for i, r in enumerate(self.rows))
        finishes: list[tuple[float, int, int]] = []
        live: dict[int, Request] = {}
        for seq, (t, i) in enumerate(arrivals):
            while finishes and finishes[0][0] < t:
                done, _, j = heapq.heappop(finishes)
                yield Event(done, "finish", live.pop(j))
            req = self.request(i, t)
            live[i] = req
            yield Event(t, "arrive", req)
            end = t + self.service_time(len(req.prompt), len(req.output))
            heapq.heappush(finishes, (end, seq, i))
        while finishes:
            done, _, j = heapq.heappop(finishes)
            yield Event(done, "finish", live.pop(j))

    def _sequential(self) -> Iterator[Event]:
        """No timestamps: one request at a time, each arriving when the last one finished."""
        t = 0.0
        for i in range(len(self.rows)):
            req = self.request(i, t)
            yield Event(t, "arrive", req)
            t += self.service_time(len(req.prompt), len(req.output))
            yield Event(t, "finish", req)

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        """Prompt tokens past the parent's prompt and reply (a root's: its whole prompt)."""
        out = []
        for r in self.rows:
            base = 0
            if r.parent >= 0:
                p = self.rows[r.parent]
                base = p.input_length + p.output_length
            out.append(max(r.input_length - base, 0))
        what = "trace requests (prompt tokens past the parent turn)"
        return np.asarray(out, dtype=np.int64), what

    def describe(self) -> dict[str, Any]:
        timed = [r.arrival for r in self.rows if r.arrival is not None]
        return {
            **super().describe(),
            "path": os.path.abspath(self.path),
            "format": self.format,
            "block_size": self.block,
            "duration_s": (max(timed) - min(timed)) if timed else None,
            "prompt_tokens": int(sum(r.input_length for r in self.rows)),
            "output_tokens": int(sum(r.output_length for r in self.rows)),
            "linked_turns": sum(r.parent >= 0 for r in self.rows),
            **self.info,
        }
