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

from radix_evict.cache.context import RequestContext
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
    kind: str | None = None  # the record's request type, where the format has one


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
        # Each row's conversation root and turn number, and how many rows continue it: a
        # parent comes before its children in the file (the reader links only to rows seen).
        self._root: list[int] = []
        self._turn: list[int] = []
        self._children = [0] * len(rows)
        for i, r in enumerate(rows):
            if r.parent >= i:
                raise TraceError(path, None, f"request {i} names a parent that comes after it "
                                 f"(row {r.parent}); a turn continues an earlier one")
            if r.parent >= 0:
                self._root.append(self._root[r.parent])
                self._turn.append(self._turn[r.parent] + 1)
                self._children[r.parent] += 1
            else:
                self._root.append(i)
                self._turn.append(0)
        self.builds = 0  # arrays built by tokens_of (a count of the work, for tests)
        self._reset()

    @property
    def num_requests(self) -> int:
        return len(self.rows)

    def tokens_of(self, i: int) -> npt.NDArray[np.int64]:
        """Request ``i``'s prompt and reply as one array (a parent's, for its children).

        Built from the parent's array, not from the whole chain: a parent's
        array is kept until its last child has been built, so a conversation
        of n turns costs n array builds (linear in its tokens), not n^2 / 2.
        An ancestor no longer kept is rebuilt once, kept along the way.
        """
        kept = self._kept.get(i)
        if kept is not None:
            return kept
        chain = [i]  # back to the nearest ancestor whose array is kept (or the root)
        while self.rows[chain[-1]].parent >= 0 and self.rows[chain[-1]].parent not in self._kept:
            chain.append(self.rows[chain[-1]].parent)
        top = self.rows[chain[-1]].parent
        full = self._kept[top] if top >= 0 else np.empty(0, dtype=np.int64)
        for j in reversed(chain):  # oldest first: each turn extends the one before
            full = self._build(j, full)
        return full

    def _build(self, j: int, inherited_from: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Row ``j``'s array from its parent's; kept while children of ``j`` are still to come."""
        self.builds += 1
        r = self.rows[j]
        own = np.empty(r.input_length + r.output_length, dtype=np.int64)
        inherited = min(len(inherited_from), r.input_length)
        own[:inherited] = inherited_from[:inherited]
        pos = np.arange(inherited, r.input_length, dtype=np.int64)
        own[inherited:r.input_length] = r.hash_ids[pos // self.block] * self.block + (
            pos % self.block)
        own[r.input_length:] = np.arange(r.output_length, dtype=np.int64) + self._out_start[j]
        if r.parent >= 0:
            self._pending[r.parent] -= 1
            if self._pending[r.parent] <= 0:
                self._kept.pop(r.parent, None)  # its last child is built
        if self._pending[j] > 0:
            self._kept[j] = own
        return own

    def request(self, i: int, arrival: float) -> Request:
        """Request ``i``; its session is its conversation's first turn (its root row)."""
        full = self.tokens_of(i)
        il = self.rows[i].input_length
        return Request(f"r{i}", full[:il], full[il:], 0, arrival, self._root[i], self._turn[i],
                       "trace", full)

    def session_of(self, i: int) -> int:
        """Request ``i``'s session: its conversation's first row."""
        return self._root[i]

    def context_of(self, req: Request) -> RequestContext:
        """Its conversation (the first turn's row), the turn it continues and its turn, its
        type where the format records one, its arrival and output length."""
        i = int(req.rid[1:])
        row = self.rows[i]
        return RequestContext(session=self._root[i], parent=row.parent if row.parent >= 0 else None,
                              turn=self._turn[i], kind=row.kind, arrival=req.arrival,
                              output_len=row.output_length, rid=req.rid)

    def _reset(self) -> None:
        """Forget kept arrays: a new pass over the requests starts with every child to come."""
        self._kept: dict[int, npt.NDArray[np.int64]] = {}
        self._pending = list(self._children)

    def events(self) -> Iterator[Event]:
        self._reset()
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
