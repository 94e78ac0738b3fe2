"""Timed replays for hybrid models: the timed server on a hybrid model's cache.

``simulate --timing --model-arch NAME``: the same server, scheduler and cost
model as every timed replay (``sim.timed``), given the hybrid tree through the
adapter in ``sim.timed.hybrid_seam``, with prefill charged per component
(``hybrid_seam.hybrid_pairs``). A full-attention layout gives today's figures.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from radix_evict.cache.hybrid.cache import HybridRadixCache
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA
from radix_evict.cache.hybrid.pool import HybridPools
from radix_evict.sim.hybrid_replay import (
    MAMBA_CHUNK,
    MAMBA_TRACK_INTERVAL,
    HybridRun,
    HybridSpec,
)
from radix_evict.sim.models.work import prefill_work
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.figures import TimedFigures
from radix_evict.sim.timed.hybrid_seam import (
    HybridServerCache,
    HybridServerPool,
    RequestState,
    hybrid_pairs,
    mamba_track,
)
from radix_evict.sim.timed.run import serve
from radix_evict.sim.timed.server import Server
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads.base import Request, Workload

__all__ = ["replay_hybrid_timed"]


def replay_hybrid_timed(workload: Workload, spec: HybridSpec, policy: str, policy_config: Any,
                        timing: TimingSpec) -> tuple[HybridRun, TimedFigures]:
    """Serve ``workload`` on a fresh hybrid cache of ``spec``'s layout under ``policy``."""
    layout, P, sizes = spec.layout, spec.page_size, spec.pools
    pools = HybridPools(sizes.full_tokens, sizes.swa_tokens, sizes.mamba_states, P)
    grid = math.lcm(MAMBA_CHUNK, P)
    cache = HybridRadixCache(pools, window=layout.window, mamba=layout.kind == "mamba",
                             policy=policy, policy_config=policy_config, mamba_grid=grid)
    seam = HybridServerCache(cache, mamba_track(P, grid, MAMBA_TRACK_INTERVAL))
    states: list[RequestState] = []

    def context(req: Request) -> RequestState:
        st = RequestState(len(req.prompt))
        states.append(st)
        return st

    def adjust(server: Server) -> None:
        server.pairs = hybrid_pairs(layout)
        if layout.kind == "mamba":  # a running request holds a state and locks one in the tree
            server.max_running = max(1, min(server.max_running, sizes.mamba_states // 2))

    tally = Tally(workload.num_requests, 0, True)
    figures, _ = serve(workload, seam, HybridServerPool(cache), P, timing,  # type: ignore[arg-type]
                       tally, split_prompt=layout.kind == "full", contexts=context,
                       adjust=adjust)
    _check(cache, states)
    return _run(policy, tally, seam, layout, states), figures


def _check(cache: HybridRadixCache, states: list[RequestState]) -> None:
    """After the last request: no lock held, every slot free or in the tree."""
    pools = cache.pools
    held = [s for s in states if s.state or s.owed or s.handle is not None]
    if held or cache.protected != [0, 0, 0] or any(
            pools.free_count[c] + cache.evictable[c] != pools.size[c] for c in (FULL, SWA, MAMBA)):
        raise RuntimeError(
            f"timed hybrid replay accounting: {len(held)} requests still hold slots, protected "
            f"{cache.protected}, free {pools.free_count} + evictable {cache.evictable} "
            f"!= sizes {pools.size}")


def _run(policy: str, tally: Tally, seam: HybridServerCache, layout: Any,
         states: list[RequestState]) -> HybridRun:
    recs = tally.records or []
    hits = [r.hit_tokens for r in recs if r.admitted]
    u = np.asarray(tally.uncached or [0], dtype=np.float64)
    work = [0, 0, 0]
    for r in recs:
        if r.admitted:
            w = prefill_work(layout, r.hit_tokens, r.prompt_tokens - r.hit_tokens)
            work = [work[0] + w.full_pairs, work[1] + w.window_pairs,
                    work[2] + w.recurrent_tokens]
    aux = SWA if layout.kind == "swa" else MAMBA if layout.kind == "mamba" else None
    return HybridRun(
        policy=policy, requests=len(recs), admitted=tally.admitted, failed=tally.failed,
        prompt_tokens=tally.prompts, hit_tokens=tally.hits,
        full_hit_tokens=sum(s.full_hit for s in states if s.full_hit > 0),
        mean_reusable_prefix=float(np.mean(hits)) if hits else 0.0,
        p50_uncached=float(np.percentile(u, 50)), p99_uncached=float(np.percentile(u, 99)),
        evicted_full=seam.evicted[FULL],
        evicted_aux=seam.evicted[aux] if aux is not None else 0,
        prefill_full_pairs=work[0], prefill_window_pairs=work[1],
        prefill_recurrent_tokens=work[2])
