"""Driving SGLang 0.5.23's own radix caches in tests (after ``sglang_env.import_sglang()``).

Both sides of a differential replay allocate from radix-evict's ``KVPool``: SGLang's
caches get it through :class:`PoolAllocator`, which adds the few allocator methods they
call. A slot freed twice or never freed therefore fails the test on either side.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from helpers.sglang_env import import_sglang
from radix_evict import KVPool

TESTS_DIR = Path(__file__).resolve().parents[1]

SGLANG_TREES = ("unified-py", "unified-rust", "legacy")


class PoolAllocator:
    """radix-evict's KVPool as SGLang's token-to-KV allocator (CPU, index-only)."""

    def __init__(self, size: int, page_size: int = 1) -> None:
        self.pool = KVPool(size=size, page_size=page_size, device="cpu", layers=0)
        self.size = size
        self.page_size = page_size
        self.device = torch.device("cpu")

    def available_size(self) -> int:
        return self.pool.available_size()

    def alloc(self, n: int) -> torch.Tensor | None:
        return self.pool.alloc(n)

    def free(self, indices: torch.Tensor) -> None:
        if indices.numel():
            self.pool.free(indices)

    # The cache frees through these too; a plain pool has one kind of slot.
    def free_segment(self, indices: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(indices)

    def free_full_segment(self, indices: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(indices)

    def free_full(self, indices: torch.Tensor) -> None:
        self.free(indices)

    def mamba_full_cache_donor(self) -> None:  # no Mamba state here
        return None


def build_sglang_cache(
    tree: str,
    allocator: PoolAllocator,
    policy: str = "lru",
    config: dict[str, Any] | None = None,
) -> Any:
    """SGLang's cache of kind ``tree`` (one of SGLANG_TREES) over ``allocator``."""
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.radix_cache import RadixCache
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

    common: dict[str, Any] = dict(
        disable=False,
        req_to_token_pool=None,
        token_to_kv_pool_allocator=allocator,
        page_size=allocator.page_size,
        eviction_policy=policy,
        eviction_policy_config=config,
    )
    if tree == "legacy":
        return RadixCache(CacheInitParams(**common))
    if tree not in SGLANG_TREES:
        raise ValueError(f"unknown SGLang tree {tree!r}; one of {SGLANG_TREES}")
    backend = "python" if tree == "unified-py" else "rust"
    return UnifiedRadixCache(
        CacheInitParams(**common, tree_components=(ComponentType.FULL,), tree_core_backend=backend)
    )


def radix_key(tokens: Any) -> Any:
    """SGLang's key type for ``tokens`` (int64 ``array('q')`` inside a RadixKey)."""
    from sglang.srt.mem_cache.radix_cache import RadixKey

    arr = array("q")
    arr.frombytes(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())
    return RadixKey(arr)


# --------------------------------------------------------------------------- workload
@dataclass(frozen=True)
class Request:
    rid: int
    prompt: np.ndarray
    out: np.ndarray
    priority: int


def chat_events(convs: int = 40, seed: int = 0) -> list[tuple[str, Request]]:
    """A small multi-turn chat: ("arrive" | "finish", request) in the order they happen.

    Conversations share a few system prompts and grow turn by turn (each prompt is the
    system prompt, the whole history and a new message), up to four requests in flight.
    """
    rng = np.random.default_rng(seed)
    fresh = iter(range(10_000, 10**9))

    def tokens(n: int) -> np.ndarray:
        return np.array([next(fresh) for _ in range(n)], dtype=np.int64)

    systems = [tokens(int(rng.integers(16, 160))) for _ in range(4)]
    history = [systems[min(int(rng.zipf(1.6)) - 1, 3)] for _ in range(convs)]
    turns_left = [int(rng.integers(1, 7)) for _ in range(convs)]
    prio = [int(rng.integers(0, 3)) for _ in range(convs)]
    events: list[tuple[str, Request]] = []
    in_flight: dict[int, Request] = {}  # conversation -> its open request
    rid = 0
    while True:
        ready = [c for c in range(convs) if turns_left[c] and c not in in_flight]
        if ready and (not in_flight or (len(in_flight) < 4 and rng.random() < 0.6)):
            c = ready[int(rng.integers(len(ready)))]
            prompt = np.concatenate([history[c], tokens(int(rng.integers(4, 80)))])
            req = Request(rid, prompt, tokens(int(rng.integers(4, 60))), prio[c])
            rid += 1
            in_flight[c] = req
            turns_left[c] -= 1
            events.append(("arrive", req))
        elif in_flight:
            c = list(in_flight)[int(rng.integers(len(in_flight)))]
            req = in_flight.pop(c)
            history[c] = np.concatenate([req.prompt, req.out])
            events.append(("finish", req))
        else:
            return events


@dataclass
class Figures:
    """What a replay decided: compared exactly between radix-evict and SGLang."""

    hits: list[int] = field(default_factory=list)  # per admitted request, in order
    uncached: list[int] = field(default_factory=list)
    evicted_tokens: int = 0
    evict_calls: int = 0
    failed: int = 0

    def admitted(self, prompt_len: int, hit: int) -> None:
        self.hits.append(hit)
        self.uncached.append(prompt_len - hit)

    def refused(self, prompt_len: int) -> None:
        """The pool could not hold the request even after evicting."""
        self.failed += 1
        self.uncached.append(prompt_len)

    @property
    def hit_tokens(self) -> int:
        return sum(self.hits)

    def percentiles(self) -> tuple[float, float, float]:
        u = np.asarray(self.uncached)
        return tuple(float(np.percentile(u, q)) for q in (50, 90, 99))  # type: ignore[return-value]

    def summary(self) -> dict[str, Any]:
        p50, p90, p99 = self.percentiles()
        return dict(
            hit_tokens=self.hit_tokens, evicted_tokens=self.evicted_tokens,
            p50=p50, p90=p90, p99=p99, failed=self.failed,
        )  # fmt: skip


def _need(prompt_len: int, out_len: int, hit: int, page: int) -> int:
    return -(-(prompt_len + out_len - hit) // page) * page


def replay_radix_evict(
    events: list[tuple[str, Request]],
    policy: Any,
    config: dict[str, Any] | None,
    pool_tokens: int,
    page_size: int,
) -> Figures:
    """The peer harness's operations on radix-evict's own RadixCache."""
    from radix_evict import RadixCache

    pool = KVPool(size=pool_tokens, page_size=page_size, device="cpu", layers=0)
    cache = RadixCache(pool, policy=policy, policy_config=config)
    fig = Figures()
    state: dict[int, Any] = {}
    P = page_size
    for kind, req in events:
        plen = len(req.prompt)
        if kind == "arrive":
            m = cache.match_prefix(req.prompt)
            hit, node = m.prefix_len, m.last_node
            cache.inc_lock_ref(node)
            need = _need(plen, len(req.out), hit, P)
            short = need - pool.available_size()
            if short > 0:
                fig.evicted_tokens += cache.evict(short)
                fig.evict_calls += 1
            new = pool.alloc(need) if need else torch.empty(0, dtype=torch.int64)
            if new is None:
                cache.dec_lock_ref(node)
                fig.refused(plen)
                state[req.rid] = None
                continue
            fig.admitted(plen, hit)
            state[req.rid] = (hit, node, torch.cat([m.indices, new]))
            continue
        st = state.pop(req.rid)
        if st is None:
            continue
        hit, node, row = st
        full = np.concatenate([req.prompt, req.out])
        L, Lp = len(full) // P * P, plen // P * P
        if L:
            cache.insert(full[:L], row[:L], priority=req.priority, prev_prefix_len=hit)
        if 0 < Lp < L:
            cache.insert(
                req.prompt[:Lp], row[:Lp], priority=req.priority + 1,
                prev_prefix_len=Lp, inserted_len=Lp,
            )  # fmt: skip
        if len(row) > L:
            pool.free(row[L:])
        cache.dec_lock_ref(node)
    assert cache.protected_size() == 0
    assert pool.available_size() + cache.evictable_size() == pool_tokens // P * P
    return fig


def replay_sglang(
    events: list[tuple[str, Request]],
    tree: str,
    policy: str,
    config: dict[str, Any] | None,
    pool_tokens: int,
    page_size: int,
    evict_seconds: list[float] | None = None,
) -> Figures:
    """The same operations on SGLang's cache ``tree`` (one of SGLANG_TREES).

    ``evict_seconds`` collects the wall time of each eviction call (for benchmarks).
    """
    import time

    from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams

    alloc = PoolAllocator(pool_tokens, page_size)
    cache = build_sglang_cache(tree, alloc, policy, config)
    legacy = tree == "legacy"
    fig = Figures()
    state: dict[int, Any] = {}
    P = page_size
    for kind, req in events:
        plen = len(req.prompt)
        if kind == "arrive":
            m = cache.match_prefix(MatchPrefixParams(key=radix_key(req.prompt)))
            hit, node = m.device_prefix_len, m.last_device_node
            lock = cache.lock(node)
            need = _need(plen, len(req.out), hit, P)
            short = need - alloc.available_size()
            if short > 0:
                t0 = time.perf_counter()
                res = cache.evict_for_alloc(EvictParams(num_tokens=short))
                if evict_seconds is not None:
                    evict_seconds.append(time.perf_counter() - t0)
                fig.evicted_tokens += res.num_tokens_evicted
                fig.evict_calls += 1
            new = alloc.alloc(need) if need else torch.empty(0, dtype=torch.int64)
            if new is None:
                cache.unlock(lock)
                fig.refused(plen)
                state[req.rid] = None
                continue
            fig.admitted(plen, hit)
            prefix = cache.path_device_indices(node)[:hit]
            state[req.rid] = (hit, lock, torch.cat([prefix, new]))
            continue
        st = state.pop(req.rid)
        if st is None:
            continue
        hit, lock, row = st
        full = np.concatenate([req.prompt, req.out])
        L, Lp = len(full) // P * P, plen // P * P
        if L:
            res = cache.insert(
                InsertParams(
                    key=radix_key(full[:L]), value=row[:L], prev_prefix_len=hit,
                    inserted_len=0, priority=req.priority,
                )
            )  # fmt: skip
            if legacy:  # the legacy tree leaves the duplicate slots to its caller
                alloc.free(row[hit : res.prefix_len])
        if 0 < Lp < L:
            cache.insert(
                InsertParams(
                    key=radix_key(req.prompt[:Lp]), value=row[:Lp], prev_prefix_len=Lp,
                    inserted_len=Lp, priority=req.priority + 1,
                )
            )  # fmt: skip
        if len(row) > L:
            alloc.free(row[L:])
        cache.unlock(lock)
    assert cache.protected_size() == 0
    assert alloc.available_size() + cache.evictable_size() == pool_tokens // P * P
    return fig


# --------------------------------------------------------------------------- requests
def sglang_policy(policy: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the policy object ``policy`` into SGLang's strategy registry as the plugin's
    factories do (its events too); returns the name to build a cache with."""
    from sglang.srt.mem_cache import utils

    from radix_evict.sglang.adapter import BridgedStrategy
    from radix_evict.sglang.events import make_events

    def build(**config: Any) -> BridgedStrategy:
        return BridgedStrategy(policy, make_events(policy))

    build.radix_evict_bridged = True  # type: ignore[attr-defined]
    build.radix_evict_policy = policy.name  # type: ignore[attr-defined]
    monkeypatch.setitem(utils._EVICTION_POLICY_FACTORIES, policy.name, build)
    return str(policy.name)


class Server:
    """SGLang's scheduler steps for one request at a time, on SGLang's own cache and Req.

    :meth:`serve` runs what SGLang 0.5.23 does with a request and its tree: the waiting
    queue's lookup (``Req.init_next_round_input``: ``match_kv_cache`` with the request),
    a row in a real ``ReqToTokenPool`` holding the cached prefix and fresh slots, a
    checkpoint of the prefilled prompt while it runs (``checkpoint_kv_cache``), then the
    output, and the final checkpoint of the finished request (``tree_cache.checkpoint``).
    """

    def __init__(self, tree: str, policy: str, pool_tokens: int = 512) -> None:
        from sglang.srt.mem_cache.memory_pool import ReqToTokenPool

        self.alloc = PoolAllocator(pool_tokens)
        self.cache = build_sglang_cache(tree, self.alloc, policy)
        self.rows = ReqToTokenPool(size=4, max_context_len=pool_tokens, device="cpu",
                                   enable_memory_saver=False)
        self.cache.req_to_token_pool = self.rows
        self.pool_tokens = pool_tokens

    def serve(self, req: Any, output: list[int]) -> int:
        """Run ``req`` to its end generating ``output``; returns its cached prefix length."""
        from sglang.srt.managers.schedule_batch import FINISH_LENGTH
        from sglang.srt.mem_cache.common import checkpoint_kv_cache

        cache, rows = self.cache, self.rows
        req.init_next_round_input(cache)
        hit = int(req.prefix_len)
        rows.alloc([req])
        idx = req.kv.req_pool_idx
        req.lock = cache.lock(req.last_node)
        prefix = cache.prefix_device_indices(req)
        n = len(req.full_untruncated_fill_ids)
        fresh = self.alloc.alloc(n - hit)
        assert fresh is not None
        rows.req_to_token[idx, :n] = torch.cat([prefix, fresh])
        req.extend_end = n
        checkpoint_kv_cache(req, cache)  # a running request's checkpoint
        if output:
            more = self.alloc.alloc(len(output))
            assert more is not None
            rows.req_to_token[idx, n : n + len(output)] = more
            req.output_ids.extend(output)
        req.refresh_fill_ids()
        req.finished_reason = FINISH_LENGTH(length=len(output))
        cache.checkpoint(req, up_to=n + len(output))  # the finished request's
        cache.unlock(req.lock)
        req.lock = None
        rows.free(req)
        assert cache.protected_size() == 0
        assert self.alloc.available_size() + cache.evictable_size() == self.pool_tokens
        return hit


def sglang_req(rid: str, prompt: list[int], **kwargs: Any) -> Any:
    """SGLang's own ``Req`` for ``prompt`` (``kwargs``: priority, session_id, ...)."""
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.sampling.sampling_params import SamplingParams

    return Req(rid, None, array("q", prompt), SamplingParams(max_new_tokens=64), **kwargs)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture
def sglang_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """radix-evict's SGLang plugin registered in this process, and undone afterwards.

    Every installed radix-evict policy package counts (the example's ``gdsf`` included);
    SGLang's registries are exactly as before once the test ends.
    """
    from radix_evict import registry
    from radix_evict.sglang import plugin

    import_sglang()
    monkeypatch.delenv("RADIX_EVICT_PLUGINS", raising=False)
    registry.reload()
    plugin.uninstall()
    plugin.register()
    assert plugin.installed() is not None, "the plugin failed (see the log)"
    yield plugin
    plugin.uninstall()
    registry.reload()


def run_python(code: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter of this venv that can ``import_sglang()``.

    A fresh process is the only way to see what SGLang's once-per-process
    ``load_plugins()`` does. ``cwd`` should not be the repository root (a stale
    ``*.egg-info`` there would shadow the installed metadata).
    """
    prelude = f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r})\n"  # for helpers.*
    full_env = {**os.environ, **(env or {})}
    r = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    return r.stdout + r.stderr
