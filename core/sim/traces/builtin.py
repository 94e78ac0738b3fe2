"""radix-evict's own trace formats: Mooncake, Alibaba Bailian (Qwen) and ServeGen offline.

Each is registered through the ``radix_evict.trace_formats`` entry points in
radix-evict's metadata, exactly as a third-party format would be.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from radix_evict.sim.traces.block_trace import BlockRow, BlockTrace
from radix_evict.sim.traces.formats import TraceFormat
from radix_evict.sim.workloads import MooncakeTrace, TraceError, TraceParams, Workload
from radix_evict.sim.workloads.trace import FIELDS as MOONCAKE_FIELDS
from radix_evict.sim.workloads.trace import (
    _lines,
    check_hash_ids,
    check_request_length,
    json_record,
)


class MooncakeFormat(TraceFormat):
    """Mooncake's traces: millisecond timestamps, 512-token blocks, no session links."""

    name = "mooncake"
    summary = "Mooncake (FAST'25): timestamp in ms, input/output lengths, 512-token hash blocks"
    fields = MOONCAKE_FIELDS
    block_size = 512

    def load(self, path: str, params: TraceParams) -> Workload:
        return MooncakeTrace(path, params)


def _int(path: str, n: int, rec: dict[str, Any], key: str, low: int | None = 0) -> int:
    v = rec[key]
    if not isinstance(v, int) or isinstance(v, bool):
        raise TraceError(path, n, f"{key} must be an integer, got {v!r}")
    if low is not None and v < low:
        raise TraceError(path, n, f"{key} must be >= {low}, got {v}")
    return v


def _blocks(path: str, n: int, rec: dict[str, Any], il: int, ol: int, block: int) -> np.ndarray:
    """Line ``n``'s hash ids, checked as a Mooncake trace's are (lengths and id range too)."""
    check_request_length(path, n, il, ol)
    hids = rec["hash_ids"]
    check_hash_ids(path, n, hids, il, block)
    return np.asarray(hids, dtype=np.int64)


def _records(path: str, fields: tuple[str, ...], limit: int) -> Any:
    """(line number, record) of every non-empty line, each checked for ``fields``."""
    count = 0
    for n, line in _lines(path):
        if not line.strip():
            continue
        yield n, json_record(path, n, line, fields)
        count += 1
        if limit and count >= limit:
            return


class BailianFormat(TraceFormat):
    """Alibaba Bailian (Qwen) traces: linked chat turns in 16-token blocks.

    ``timestamp`` is in seconds; ``type`` (optional) is the request's kind;
    ``parent_chat_id`` is -1 for a conversation's
    first turn, else the ``chat_id`` of the turn it continues, whose prompt
    and reply the new prompt then starts with. A parent that is not in the
    file (a trace cut out of a longer one) leaves the turn unlinked; the
    count is in the trace's description as ``unlinked_turns``.
    """

    name = "bailian"
    summary = "Alibaba Bailian/Qwen: chat_id, parent_chat_id, turn, timestamp (s), 16-token blocks"
    fields = ("chat_id", "parent_chat_id", "turn", "timestamp", "input_length",
              "output_length", "hash_ids")
    block_size = 16

    def load(self, path: str, params: TraceParams) -> Workload:
        rows: list[BlockRow] = []
        row_of: dict[int, int] = {}
        unlinked = 0
        for n, rec in _records(path, self.fields, params.limit):
            chat = _int(path, n, rec, "chat_id")
            parent = _int(path, n, rec, "parent_chat_id", low=-1)
            _int(path, n, rec, "turn")
            ts = rec["timestamp"]
            if (isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts)
                    or ts < 0):
                raise TraceError(path, n, f"timestamp must be a number of seconds >= 0, got {ts!r}")
            il = _int(path, n, rec, "input_length")
            ol = _int(path, n, rec, "output_length")
            blocks = _blocks(path, n, rec, il, ol, params.block_size)
            if parent == chat:
                raise TraceError(path, n, f"chat_id {chat} names itself as its parent")
            link = -1
            if parent >= 0:
                link = row_of.get(parent, -1)
                unlinked += link < 0
            kind = rec.get("type")  # text, image, file, search...: optional in the format
            row_of[chat] = len(rows)
            rows.append(BlockRow(float(ts), il, ol, blocks, link,
                                 str(kind) if kind is not None else None))
        return BlockTrace(path, self.name, rows, params, {"unlinked_turns": unlinked})


class ServeGenFormat(TraceFormat):
    """ServeGen's offline traces: no timestamps, so requests run one after another.

    ``output_length`` is optional (0 when absent). The format fixes no block
    size: give ``--block-size``.
    """

    name = "servegen"
    summary = "ServeGen offline: request_id, input_length, hash_ids; no timestamps"
    fields = ("request_id", "input_length", "hash_ids")
    block_size = None

    def load(self, path: str, params: TraceParams) -> Workload:
        rows: list[BlockRow] = []
        for n, rec in _records(path, self.fields, params.limit):
            il = _int(path, n, rec, "input_length")
            ol = _int(path, n, rec, "output_length") if "output_length" in rec else 0
            rows.append(BlockRow(None, il, ol, _blocks(path, n, rec, il, ol, params.block_size)))
        return BlockTrace(path, self.name, rows, params)
