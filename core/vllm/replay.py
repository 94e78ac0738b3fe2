"""Replay a stream of requests, each a chain of chunk keys, through vLLM's offload manager.

Each request does what vLLM's offloading scheduler does with the CPU tier
(``offloading/scheduler.py``): meets its keys with their end positions, looks them up head
first and loads the hit prefix (pinned while the load runs), offers the rest for storing
(``prepare_store``: evictions happen here), completes the store, and finishes. With
``concurrency`` > 1 a request's load and store complete, and it finishes, only when that
many later requests have started: chunks are pinned across other requests' evictions.

A Mooncake trace gives the chains: ``hash_ids`` are chained block hashes (the same id at a
position means the same prefix), one offload chunk each. vLLM is imported lazily.
"""

from __future__ import annotations

import importlib
import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from radix_evict.inputs import TRACE_BYTES, open_lines

MOONCAKE_BLOCK_TOKENS = 512  # the traces' hash_ids cover 512 tokens each


def mooncake_chains(path: str, limit: int | None = None) -> list[list[int]]:
    """The ``hash_ids`` of each request of a Mooncake trace (JSON lines), in order."""
    out: list[list[int]] = []
    for line in open_lines(path, limit=TRACE_BYTES, what="Mooncake trace"):
        if not line.strip():
            continue
        out.append([int(x) for x in json.loads(line)["hash_ids"]])
        if limit is not None and len(out) >= limit:
            break
    return out


@dataclass
class ReplayResult:
    requests: int = 0
    chunks: int = 0  # chunks requests asked for
    hit_chunks: int = 0  # of those, loaded from the tier
    stored: int = 0
    evicted: int = 0
    failed_stores: int = 0  # prepare_store returned None
    evictions: list[list[bytes]] = field(default_factory=list)  # per request, what went
    hits: list[int] = field(default_factory=list)  # per request

    @property
    def hit_rate(self) -> float:
        return self.hit_chunks / self.chunks if self.chunks else 0.0


def chunk_key(block: int, group: int = 0) -> bytes:
    """vLLM's offload key for block id ``block`` (``make_offload_key``)."""
    base = importlib.import_module("vllm.v1.kv_offload.base")
    return bytes(base.make_offload_key(int(block).to_bytes(8, "big"), group))


class _Pending:
    def __init__(self, ctx: Any, loaded: list[bytes], stored: list[bytes]) -> None:
        self.ctx, self.loaded, self.stored = ctx, loaded, stored


def replay(manager: Any, chains: Iterable[Sequence[int]], *, concurrency: int = 1,
           block_tokens: int = MOONCAKE_BLOCK_TOKENS, record: bool = False,
           transfer_params: Sequence[Mapping[str, Any] | None] = ()) -> ReplayResult:
    """Run every chain through ``manager`` (a ``CPUOffloadingManager``); count the hits.

    Request ``n`` is ``r<n>``; ``transfer_params[n]``, where given, is its
    ``kv_transfer_params`` (what a client sends with the request).
    """
    base = importlib.import_module("vllm.v1.kv_offload.base")
    hit = base.LookupResult.HIT
    result = ReplayResult()
    window: deque[_Pending] = deque()
    for n, chain in enumerate(chains):
        params = transfer_params[n] if n < len(transfer_params) else None
        ctx = base.ReqContext(req_id=f"r{n}",
                              kv_transfer_params=dict(params) if params is not None else None)
        manager.on_new_request(ctx)
        keys = [chunk_key(b) for b in chain]
        for i, key in enumerate(keys):
            ctx.set_offload_key_position(key, (i + 1) * block_tokens)
        hits = 0
        for key in keys:
            if manager.lookup(key, ctx) != hit:
                break
            hits += 1
        loaded = keys[:hits]
        if loaded:
            manager.prepare_load(loaded, ctx)
        out = manager.prepare_store(keys[hits:], ctx) if hits < len(keys) else None
        stored: list[bytes] = []
        if hits < len(keys) and out is None:
            result.failed_stores += 1
        elif out is not None:
            stored = list(out.keys_to_store)
            result.evicted += len(out.evicted_keys)
            if record:
                result.evictions.append(list(out.evicted_keys))
        result.requests += 1
        result.chunks += len(keys)
        result.hit_chunks += hits
        result.stored += len(stored)
        if record:
            result.hits.append(hits)
        window.append(_Pending(ctx, loaded, stored))
        while len(window) >= concurrency:
            _finish(manager, window.popleft())
    while window:
        _finish(manager, window.popleft())
    return result


def _finish(manager: Any, p: _Pending) -> None:
    if p.loaded:
        manager.complete_load(p.loaded, p.ctx)
    if p.stored:
        manager.complete_store(p.stored, p.ctx)
    manager.on_request_finished(p.ctx)

