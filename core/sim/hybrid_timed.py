"""Timed replays for hybrid models: the timed server on a hybrid model's cache.

``simulate --timing --model-arch NAME``: the same server, scheduler and cost
model as every timed replay (``sim.timed``), given the hybrid tree through the
adapter in ``sim.timed.hybrid_seam``, with prefill charged per component
(``hybrid_seam.hybrid_pairs``). A full-attention layout gives today's figures. With a
host tier, a match's host part is loaded back at admission and its full-KV tokens are
charged on the cost model's ``[transfer]`` table, as the plain host tier's are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from radix_evict.cache.host_tier import HostTierSpec
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

__all__ = ["HybridServing", "replay_hybrid_timed"]


class HybridServing:
    """One timed server's hybrid cache: the tree, its adapter and pool, the requests' states.

    Built once per server (``replay_hybrid_timed``'s one, or each replica of a hybrid
    fleet, ``sim.fleet.hybrid``), so both serve the same cache under the same rules.
    """

    def __init__(self, spec: HybridSpec, policy: str, policy_config: Any,
                 host: HostTierSpec | None = None) -> None:
        layout, P, sizes = spec.layout, spec.page_size, spec.pools
        pools = HybridPools(sizes.full_tokens, sizes.swa_tokens, sizes.mamba_states, P)
        grid = math.lcm(MAMBA_CHUNK, P)
        self.layout, self.mamba_states = layout, sizes.mamba_states
        self.cache = HybridRadixCache(pools, window=layout.window, mamba=layout.kind == "mamba",
                                      policy=policy, policy_config=policy_config,
                                      mamba_grid=grid, host_tier=host)
        self.seam = HybridServerCache(self.cache, mamba_track(P, grid, MAMBA_TRACK_INTERVAL))
        self.pool = HybridServerPool(self.cache)
        self.split_prompt = layout.kind == "full"  # the prompt's own checkpoint: full KV only
        self.states: list[RequestState] = []

    def context(self, req: Request) -> RequestState:
        """The server's per-request context: the adapter's state of that request."""
        st = RequestState(len(req.prompt))
        self.states.append(st)
        return st

    def adjust(self, server: Server) -> None:
        """Prefill charged per component; Mamba: a running request holds a state and locks
        one in the tree, so at most half the states run."""
        server.pairs = hybrid_pairs(self.layout)
        if self.layout.kind == "mamba":
            server.max_running = max(1, min(server.max_running, self.mamba_states // 2))

    def check(self) -> None:
        """The end-of-replay accounting (:func:`_check`)."""
        _check(self.cache, self.states)

    def full_hit_tokens(self) -> int:
        """What full-attention KV alone covered, each request at its first match."""
        return sum(s.full_hit for s in self.states if s.full_hit > 0)


def replay_hybrid_timed(workload: Workload, spec: HybridSpec, policy: str, policy_config: Any,
                        timing: TimingSpec, host: HostTierSpec | None = None
                        ) -> tuple[HybridRun, TimedFigures]:  # fmt: skip
    """Serve ``workload`` on a fresh hybrid cache of ``spec``'s layout under ``policy``
    (``host``: with a host tier behind it)."""
    h = HybridServing(spec, policy, policy_config, host)
    tally = Tally(workload.num_requests, 0, True)
    figures, _ = serve(workload, h.seam, h.pool, spec.page_size, timing,  # type: ignore[arg-type]
                       tally, split_prompt=h.split_prompt, contexts=h.context, adjust=h.adjust)
    h.check()
    return _run(policy, tally, h, spec.layout), figures


def _check(cache: HybridRadixCache, states: list[RequestState]) -> None:
    """After the last request: no lock held, every slot free or in the tree (and the host
    pools against the tree's host copies)."""
    pools = cache.pools
    held = [s for s in states if s.state or s.owed or s.handle is not None]
    if held or cache.protected != [0, 0, 0] or any(
            pools.free_count[c] + cache.evictable[c] != pools.size[c] for c in (FULL, SWA, MAMBA)):
        raise RuntimeError(
            f"timed hybrid replay accounting: {len(held)} requests still hold slots, protected "
            f"{cache.protected}, free {pools.free_count} + evictable {cache.evictable} "
            f"!= sizes {pools.size}")
    if cache.host is not None:
        cache.check()


def _run(policy: str, tally: Tally, h: HybridServing, layout: Any) -> HybridRun:
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
        full_hit_tokens=h.full_hit_tokens(),
        mean_reusable_prefix=float(np.mean(hits)) if hits else 0.0,
        p50_uncached=float(np.percentile(u, 50)), p99_uncached=float(np.percentile(u, 99)),
        evicted_full=h.seam.evicted[FULL],
        evicted_aux=h.seam.evicted[aux] if aux is not None else 0,
        prefill_full_pairs=work[0], prefill_window_pairs=work[1],
        prefill_recurrent_tokens=work[2], host_hit_tokens=h.seam.host_loaded,
        host=h.cache.host.stats.as_dict() if h.cache.host is not None else None)
