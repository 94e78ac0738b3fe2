"""Replays for hybrid models: a workload through the hybrid cache of one model layout.

Per request (page size P, window W), the operations SGLang's scheduler makes
around its unified tree (the same as ``tests/helpers/hybrid_rig.py``, whose
decisions match SGLang's own tree):

    arrive:  match the prompt; lock; evict each component's shortfall
             (full and window: the tokens the request needs; Mamba: one state);
             allocate, or count a refused admission
             checkpoint after prefill: window: insert the prompt, or up to the
             branching point the match reported; Mamba: the prompt to its tracked
             point, with a copy of the state; the lock moves to where it ended
    finish:  window: the request's window KV that fell behind the window during
             decode is freed first (SGLang's ``free_swa_out_of_window_slots``)
             Mamba: the key is cut to where the request's last state was saved
             insert; free what the tree did not take; unlock

A result reports the hit rate the model can use (the reusable prefix, every
component present) beside the one full-attention KV alone would give, so the
cost of the window or the states shows. With a host tier (``host``), a match
that reaches host copies loads them back before the lock (SGLang's
``init_load_back``), and the result reports what came from host.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.hybrid.cache import HybridRadixCache
from radix_evict.cache.hybrid.layout import HybridLayout
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA
from radix_evict.cache.hybrid.pool import HybridPools
from radix_evict.sim.models.sizing import (
    MAMBA_FULL_MEMORY_RATIO,
    SWA_FULL_TOKENS_RATIO,
    PoolSizes,
    parse_bytes,
    pool_sizes,
)
from radix_evict.sim.models.work import prefill_work
from radix_evict.sim.tables import Column, TextTable
from radix_evict.sim.workloads.base import Workload

MAMBA_CHUNK = 64  # SGLang's mamba_cache_chunk_size for FLA-based models (FLA_CHUNK_SIZE)
MAMBA_TRACK_INTERVAL = 256  # --mamba-track-interval's default (arg_groups/fields/exec_.py:530)


@dataclass(frozen=True)
class HybridSpec:
    """A model layout and the pools it gets."""

    layout: HybridLayout
    pools: PoolSizes
    page_size: int
    kv_bytes: int | None  # None: sized from --pool-tokens


def build_spec(layout: HybridLayout, *, kv_memory: str | None, pool_tokens: int | None,
               default_tokens: int, page_size: int, swa_ratio: float | None,
               mamba_ratio: float | None) -> HybridSpec:  # fmt: skip
    """Pools from a KV budget in bytes, or from the full pool's tokens with SGLang's ratios."""
    swa_r = SWA_FULL_TOKENS_RATIO if swa_ratio is None else swa_ratio
    mamba_r = MAMBA_FULL_MEMORY_RATIO if mamba_ratio is None else mamba_ratio
    if kv_memory is not None:
        if pool_tokens is not None:
            raise ValueError("give --kv-memory or --pool-tokens, not both")
        kv = parse_bytes(kv_memory)
        return HybridSpec(layout, pool_sizes(layout, kv, page_size, swa_r, mamba_r), page_size,
                          kv)  # fmt: skip
    full = (pool_tokens or default_tokens) // page_size * page_size
    # The same split, read from the full pool's side.
    kv = math.ceil(full * layout.bytes_per_token("full"))
    if layout.kind == "mamba":
        kv = math.ceil(kv * (1 + mamba_r))
    elif layout.kind == "swa":
        kv = math.ceil(full * (layout.bytes_per_token("full")
                               + swa_r * layout.bytes_per_token("swa")))  # fmt: skip
    sizes = pool_sizes(layout, kv, page_size, swa_r, mamba_r)
    return HybridSpec(layout, PoolSizes(full, sizes.swa_tokens, sizes.mamba_states), page_size,
                      None)  # fmt: skip


@dataclass(frozen=True)
class HybridRun:
    """One policy's replay of a workload through one layout."""

    policy: str
    requests: int
    admitted: int
    failed: int
    prompt_tokens: int
    hit_tokens: int  # reusable: every component present
    full_hit_tokens: int  # what full-attention KV alone covered
    mean_reusable_prefix: float
    p50_uncached: float
    p99_uncached: float
    evicted_full: int
    evicted_aux: int  # window tokens or states
    prefill_full_pairs: int = 0  # the uncached spans' work per component (sim.models.work)
    prefill_window_pairs: int = 0
    prefill_recurrent_tokens: int = 0
    host_hit_tokens: int = 0  # of hit_tokens: loaded back from the host tier
    host: dict[str, Any] | None = None  # the host tier's counters (None: no host tier)

    @property
    def host_hit_rate(self) -> float:
        return self.host_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def full_hit_rate(self) -> float:
        return self.full_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "hit_rate": self.hit_rate, "full_hit_rate": self.full_hit_rate,
                "host_hit_rate": self.host_hit_rate}  # fmt: skip


def free_out(evicted: int, protected: int, pre_len: int, window: int, page: int
             ) -> tuple[int, int]:  # fmt: skip
    """``(start, new)``: the window KV a request frees itself, ``[start, new)``.

    SGLang's ``free_swa_out_of_window_slots`` (``mem_cache/common.py:75-140``):
    once ``pre_len`` is a window past the request's floor ``evicted``, it frees
    from ``max(evicted, protected)`` (never the prefix the tree owns) up to
    ``max(window, page)`` rounded up to pages behind ``pre_len``; ``new`` is the
    new floor.
    """
    if pre_len - window < evicted + 1:
        return evicted, evicted
    start = max(evicted, protected)
    page_up = -(-max(window, page) // page) * page
    new = max(start, pre_len - page_up) // page * page
    return (start, new) if new > start else (start, start)


@dataclass
class _Live:
    """A request in flight: its lock, slots, and how much of it the tree owns."""

    lock: Any
    end: int  # its row's length: hit + what it allocated
    protected: int  # the prefix the tree owns (its match, then its checkpoint)
    evicted: int = 0  # its window floor
    inserted: int = 0  # what it inserted itself (SGLang's cache_inserted_len)


def state_len(prompt: int, total: int, page: int) -> int:
    """Where the request's last recurrent state was saved (the length its insert keeps).

    Page 1 keeps only the state at the sequence end (no extra buffer,
    ``components/mamba.py:612-626``); larger pages keep the last tracked one: the
    prompt's last chunk-aligned point or a decode point on the track grid.
    """
    if page == 1:
        return total
    grid = math.lcm(MAMBA_CHUNK, page)
    track = math.lcm(grid, MAMBA_TRACK_INTERVAL)
    return max(prompt // grid * grid, total // track * track)


def replay_hybrid(workload: Workload, spec: HybridSpec, policy: str, policy_config: Any = None,
                  host: HostTierSpec | None = None) -> HybridRun:  # fmt: skip
    """Every event of ``workload`` through a fresh hybrid cache of ``spec``'s layout
    (``host``: with a host tier behind it)."""
    layout, P = spec.layout, spec.page_size
    sizes = spec.pools
    pools = HybridPools(sizes.full_tokens, sizes.swa_tokens, sizes.mamba_states, P)
    kind = layout.kind
    cache = HybridRadixCache(pools, window=layout.window, mamba=kind == "mamba",
                             policy=policy, policy_config=policy_config,
                             mamba_grid=math.lcm(MAMBA_CHUNK, P), host_tier=host)  # fmt: skip
    aux = SWA if kind == "swa" else MAMBA if kind == "mamba" else None
    live: dict[Any, _Live] = {}
    hits: list[int] = []
    uncached: list[int] = []
    full_hits = prompt_tokens = failed = from_host = 0
    work = [0, 0, 0]
    evicted = [0, 0, 0]
    for _, what, req in workload.events():
        if what != "arrive":
            if req.rid in live:
                _finish(cache, req, live.pop(req.rid), kind)
            continue
        prompt = np.asarray(req.prompt, dtype=np.int64)
        prompt_tokens += len(prompt)
        m = cache.match_prefix(prompt)
        on_device = m.prefix_len
        if m.host_node is not None and m.host_node is not m.node:
            m = cache.load_back(m)  # SGLang's init_load_back, before the request locks
        lock = cache.inc_lock_ref(m.node)
        need = -(-(len(prompt) + len(req.output) - m.prefix_len) // P) * P
        aux_need = need if aux == SWA else 1 if aux == MAMBA else 0
        short = [max(0, need - pools.available(FULL)), 0, 0]
        if aux is not None:
            short[aux] = max(0, aux_need - pools.available(aux))
        if any(short):
            freed = cache.evict(*short)
            evicted = [a + b for a, b in zip(evicted, freed, strict=True)]
        if need > pools.available(FULL) or (aux is not None and aux_need > pools.available(aux)):
            cache.dec_lock_ref(lock)
            failed += 1
            uncached.append(len(prompt))
            continue
        pools.alloc(FULL, need)
        if aux is not None:
            pools.alloc(aux, aux_need)
        live[req.rid] = state = _Live(lock, m.prefix_len + need, m.prefix_len)
        if kind == "swa":
            _checkpoint(cache, req, state, m.branching_len)
        elif kind == "mamba":
            _state_checkpoint(cache, req, state)
        hits.append(m.prefix_len)
        from_host += m.prefix_len - on_device  # a refused admission counts no hit
        w = prefill_work(layout, m.prefix_len, len(prompt) - m.prefix_len)
        work = [work[0] + w.full_pairs, work[1] + w.window_pairs, work[2] + w.recurrent_tokens]
        full_hits += m.full_prefix_len
        uncached.append(len(prompt) - m.prefix_len)
    _check_accounting(cache, live)
    u = np.asarray(uncached or [0], dtype=np.float64)
    return HybridRun(
        policy=policy, requests=len(uncached), admitted=len(hits), failed=failed,
        prompt_tokens=prompt_tokens, hit_tokens=sum(hits), full_hit_tokens=full_hits,
        mean_reusable_prefix=float(np.mean(hits)) if hits else 0.0,
        p50_uncached=float(np.percentile(u, 50)), p99_uncached=float(np.percentile(u, 99)),
        evicted_full=evicted[FULL], evicted_aux=evicted[aux] if aux is not None else 0,
        prefill_full_pairs=work[0], prefill_window_pairs=work[1],
        prefill_recurrent_tokens=work[2], host_hit_tokens=from_host,
        host=cache.host.stats.as_dict() if cache.host is not None else None,
    )  # fmt: skip


def _check_accounting(cache: HybridRadixCache, live: dict[Any, _Live]) -> None:
    """After the last event: no lock held, every slot free or in the tree."""
    pools = cache.pools
    if (
        live
        or cache.protected != [0, 0, 0]
        or any(
            pools.free_count[c] + cache.evictable[c] != pools.size[c] for c in (FULL, SWA, MAMBA)
        )
    ):
        raise RuntimeError(
            f"hybrid replay accounting: {len(live)} requests unfinished, protected "
            f"{cache.protected}, free {pools.free_count} + evictable {cache.evictable} "
            f"!= sizes {pools.size}"
        )
    if cache.host is not None:
        cache.check()  # the host pools against the nodes' host copies too


def _free_out(cache: HybridRadixCache, live: _Live, pre_len: int) -> None:
    assert cache.window is not None
    start, new = free_out(live.evicted, live.protected, pre_len, cache.window, cache.page_size)
    cache.pools.free(SWA, new - start)
    live.evicted = new


def _checkpoint(cache: HybridRadixCache, req: Any, live: _Live, branch: int | None) -> None:
    """After prefill, SGLang inserts the prompt, or up to a branching point the match
    reported (``checkpoint_into_tree``, ``unified_radix_cache.py:1164-1330``): the window
    KV there is live again, for the next request that shares the prefix."""
    branch = branch if branch is not None and branch > live.protected else None
    cut = min(len(req.prompt), branch) if branch is not None else len(req.prompt)
    _free_out(cache, live, cut - 1)
    K = cut // cache.page_size * cache.page_size
    prompt = np.asarray(req.prompt, dtype=np.int64)
    r = cache.insert(prompt[:K], prev_prefix_len=live.protected, priority=req.priority,
                     swa_evicted_len=live.evicted)  # fmt: skip
    cache.dec_lock_ref(live.lock)
    live.lock = cache.inc_lock_ref(r.node)
    live.protected = live.inserted = K
    if branch is not None and branch <= K:
        _free_out(cache, live, len(req.prompt))


def _state_checkpoint(cache: HybridRadixCache, req: Any, live: _Live) -> None:
    """After prefill the tree gets a copy of the state at the prompt's tracked point, in a
    slot of its own, evicting a state for it if it must (``components/mamba.py:527-554``)."""
    P = cache.page_size
    K = len(req.prompt) if P == 1 else len(req.prompt) // cache.mamba_grid * cache.mamba_grid
    if live.protected >= K:
        return
    if not cache.pools.can_alloc(MAMBA, 1):
        cache.evict(mamba=1)
        if not cache.pools.can_alloc(MAMBA, 1):
            return
    cache.pools.alloc(MAMBA, 1)
    prompt = np.asarray(req.prompt, dtype=np.int64)
    r = cache.insert(prompt[:K], prev_prefix_len=live.protected, priority=req.priority,
                     mamba_state=True)  # fmt: skip
    cache.dec_lock_ref(live.lock)
    live.lock = cache.inc_lock_ref(r.node)
    live.protected = live.inserted = K


def _finish(cache: HybridRadixCache, req: Any, live: _Live, kind: str) -> None:
    """Insert what the request computed, free what the tree did not take, unlock."""
    P = cache.page_size
    tokens = np.asarray(req.tokens(), dtype=np.int64)
    end = len(tokens) // P * P
    if kind == "swa":
        _free_out(cache, live, len(tokens) - 1)  # what decode freed
    elif kind == "mamba":
        end = state_len(len(req.prompt), len(tokens), P)
    cache.insert(tokens[:end], prev_prefix_len=live.protected, inserted_len=live.inserted,
                 priority=req.priority, swa_evicted_len=live.evicted,
                 mamba_state=kind == "mamba")  # fmt: skip
    prompt_end = len(req.prompt) // P * P
    if kind == "full" and 0 < prompt_end < end:
        # A full-attention tree splits at the prompt, as today's replay and SGLang's
        # single-component checkpoint do (unified_radix_cache.py:1257-1282).
        cache.insert(tokens[:prompt_end], prev_prefix_len=prompt_end, inserted_len=prompt_end,
                     priority=req.priority + 1)  # fmt: skip
    tail = live.end - max(end, live.protected)
    cache.pools.free(FULL, tail)
    if kind == "swa":
        cache.pools.free(SWA, tail)
    cache.dec_lock_ref(live.lock)


@dataclass(frozen=True)
class HybridReport:
    """Every policy's hybrid replay of one workload, and which reused the most."""

    workload: str
    requests: int
    spec: HybridSpec
    runs: list[HybridRun]
    timed: list[Any] | None = None  # each run's TimedFigures, with --timing

    def _p99(self, i: int) -> float:
        return self.timed[i].ttft_ms.p99 if self.timed else 0.0

    @property
    def best_by(self) -> str:
        return "lowest p99 TTFT" if self.timed else "highest reusable hit rate"

    @property
    def best(self) -> HybridRun:
        """Timed: the lowest p99 TTFT; else the highest reusable hit rate (ties: the lower
        p99 of uncached tokens, then the name)."""
        i = min(range(len(self.runs)), key=lambda i: (
            self._p99(i), -self.runs[i].hit_rate, self.runs[i].p99_uncached, self.runs[i].policy))
        return self.runs[i]

    def table(self) -> TextTable:
        """One row per policy: the reusable and the full-KV hit rate, tails, evictions."""
        lay, pools = self.spec.layout, self.spec.pools
        t = TextTable(f"{self.workload} on {lay.name} ({lay.kind}): full {pools.full_tokens:,} "
                      f"tokens, window {pools.swa_tokens:,} tokens, {pools.mamba_states:,} "
                      "states")  # fmt: skip
        host = any(r.host is not None for r in self.runs)
        for col in ("reusable hit rate", *(("from host",) if host else ()), "full-KV hit rate",
                    "mean reusable prefix",
                    "p99 uncached", "evicted full", "evicted window/states", "failed",
                    *(("p99 TTFT ms",) if self.timed else ())):  # fmt: skip
            t.add_column(col, justify="right")
        t.columns.insert(0, Column("policy"))
        for i, r in enumerate(self.runs):
            t.add_row(r.policy, f"{r.hit_rate:.4f}",
                      *((f"{r.host_hit_rate:.4f}",) if host else ()), f"{r.full_hit_rate:.4f}",
                      f"{r.mean_reusable_prefix:,.1f}", f"{r.p99_uncached:,.0f}",
                      f"{r.evicted_full:,}", f"{r.evicted_aux:,}", f"{r.failed:,}",
                      *((f"{self._p99(i):,.1f}",) if self.timed else ()))  # fmt: skip
        t.caption = ("reusable: every component present (what the model can skip); full-KV: "
                     "what full attention alone holds; docs/hybrid.md")  # fmt: skip
        return t

    def to_json(self) -> dict[str, Any]:
        layout, pools = self.spec.layout, self.spec.pools
        return {
            "workload": self.workload, "requests": self.requests,
            "model_arch": layout.name, "kind": layout.kind, "window": layout.window,
            "source": layout.source, "kv_bytes": self.spec.kv_bytes,
            "page_size": self.spec.page_size, "pools": asdict(pools),
            "results": [{**r.to_json(), **({"timing": self.timed[i].to_dict()}
                                           if self.timed else {})}
                        for i, r in enumerate(self.runs)],
            "best": self.best.policy, "best_by": self.best_by,
        }  # fmt: skip


def hybrid_report(workload: Workload, spec: HybridSpec, runs: list[tuple[str, Any]],
                  timing: Any = None, host: HostTierSpec | None = None) -> HybridReport:
    """Replay ``workload`` once per ``(policy, config)`` in ``runs``; with ``timing`` (a
    TimingSpec) through the timed server (``sim.hybrid_timed``); ``host``: a host tier."""
    if not runs:
        raise ValueError("no policy to replay")
    if timing is None:
        results = [replay_hybrid(workload, spec, p, c, host) for p, c in runs]
        return HybridReport(workload.name, workload.num_requests, spec, results)
    from radix_evict.sim.hybrid_timed import replay_hybrid_timed

    timed = [replay_hybrid_timed(workload, spec, p, c, timing, host) for p, c in runs]
    return HybridReport(workload.name, workload.num_requests, spec, [r for r, _ in timed],
                        [f for _, f in timed])  # fmt: skip
