"""Replay a workload through RadixCache + KVPool, as the side-by-side harness does.

The per-request operation sequence is the harness's (``../peer/sglang_bench.py``,
``replay_radix_evict``), so for the same workload, pool and policy the figures
here equal the harness's radix-evict row:

    arrive:  m = match_prefix(prompt)
             (host tier: m.host_len > 0 -> load_back(m.host_node), which then is the node)
             inc_lock_ref(m.last_node)
             need = round_up(prompt + output - hit, page); evict the shortfall
             new = alloc(need)  (None: unlock, count a failed admission)
    finish:  insert(prompt+output cut to pages, row, priority=p, prev_prefix_len=hit)
             insert(prompt cut to pages, row, priority=p+1, prev_prefix_len=inserted_len=Lp)
             free the partial last page; dec_lock_ref(m.last_node)

A failed admission counts its whole prompt as uncached, as in the harness.
The cache operations are timed in CPU time of the replaying thread, so req/s
does not drop when replays share cores (see :mod:`radix_evict.sim.runs`); ``wall_s``
is wall time. Everything returned has ``to_dict()`` giving plain JSON types.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from radix_evict.cache.args import check_int
from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.pool import KVPool
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.errors import RadixEvictError
from radix_evict.policies.config import ConfigInput
from radix_evict.policies.contract import DEFAULT_POLICY, EvictionPolicy
from radix_evict.policies.registry import load_policy
from radix_evict.sim.configs import NONE, PolicyRun, RunConfig, describe_workload, resolve_config
from radix_evict.sim.host import add_pcie_bytes, tier_at
from radix_evict.sim.results import (
    HostFigures,
    MatrixResult,
    ReplayResult,
    RequestRecord,
    TierStats,
    TimelinePoint,
    stats_dict,
)
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Request, Workload

__all__ = [
    "PROGRESS_STEPS",
    "TIMELINE_POINTS",
    "MatrixResult",
    "ReplayError",
    "ReplayResult",
    "RequestRecord",
    "TierStats",
    "TimelinePoint",
    "replay",
    "stats_dict",
]

ProgressFn = Callable[[int, int], None]
ContextFn = Callable[[Request], Any]  # a request's RequestContext (Workload.context_of)

TIMELINE_POINTS = 50
PROGRESS_STEPS = 200
_RUNS = ("PolicyRun", "RunSpec", "as_runs", "default_policies", "policy_matrix",
         "replay_policies")  # in radix_evict.sim.runs; importable from here as before


def __getattr__(name: str) -> Any:
    """Running many replays moved to :mod:`radix_evict.sim.runs`; the old names still work."""
    if name in _RUNS:
        from radix_evict.sim import runs

        return getattr(runs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ReplayError(RadixEvictError, RuntimeError):
    """The replay left the cache inconsistent: a lock held or a slot leaked."""


@dataclass
class _Setup:
    """What one replay runs on: a fresh pool and cache, and the config it was built with."""

    name: str
    run_config: RunConfig
    pool: KVPool
    cache: RadixCache
    pool_size: int
    page_size: int


def _set_up(workload: Workload, policy: str | PolicyRun | EvictionPolicy, policy_config: Any,
            pool_tokens: int | None, page_size: int,
            host: HostTierSpec | None = None, device: str = "cpu") -> _Setup:
    """Round the pool to whole pages, resolve the config, build the pool and the cache.

    A host tier of less than a page is no host tier (:func:`radix_evict.sim.host.tier_at`):
    the replay is the one-tier one.
    """
    P = check_int("page_size", page_size, 1)
    requested = workload.default_pool_tokens if pool_tokens is None else int(pool_tokens)
    pool_size = requested // P * P
    if pool_size <= 0:
        raise ValueError(f"pool of {requested} tokens holds no whole page of {P}")
    if isinstance(policy, PolicyRun):  # parsed once: its config needs no second check
        run = policy
        policy = run.policy
        if not isinstance(policy_config, RunConfig):
            policy_config = run.on(workload)
    name = policy if isinstance(policy, str) else policy.name
    if isinstance(policy_config, RunConfig):
        run_config = policy_config
    elif isinstance(policy, str):
        run_config = resolve_config(workload, name, policy_config)
    else:  # a policy object carries its own config
        run_config = RunConfig(None, NONE)
    pool = KVPool(size=pool_size, page_size=P, device=device, layers=0)
    if tier_at(host, P) is None:  # no whole page (--host-tokens 0): the one-tier replay
        host = None
    tier: dict[str, Any] = {} if host is None else {"host_tier": host}
    if isinstance(policy, str):  # built here, once: the cache gets a policy, not a name
        policy = load_policy(policy, run_config.config)
    cache = RadixCache(pool, page_size=P, policy=policy, **tier)
    return _Setup(name, run_config, pool, cache, pool_size, P)


class _Loop:
    """The per-request operation sequence (module docstring), its cache time measured.

    CPU time of this thread, not wall time: replays in more processes than
    cores (parallel.plan_workers) are time-sliced, and wall time would count
    the other processes' turns. It costs ~0.24 us a call against
    perf_counter's ~0.04 us (a syscall, not the vDSO): ~1 us a request, under
    1% of a request's cache time.
    """

    def __init__(self, s: _Setup, tally: Tally, split_prompt: bool,
                 contexts: ContextFn | None = None) -> None:
        self.cache, self.pool, self.P = s.cache, s.pool, s.page_size
        self.tally = tally
        self.split_prompt = split_prompt
        self.contexts = contexts  # only for a policy that reads node.context
        self.state: dict[str, tuple[int, Any, torch.Tensor, Any] | None] = {}
        self.empty = torch.empty((0,), dtype=torch.int64)
        self.t_cache = self.t_evict = 0.0

    def arrive(self, req: Request, now: float) -> None:
        """Match, lock, evict the shortfall, allocate; a request that finds no room is counted."""
        cache, pool, P, tally, cpu = self.cache, self.pool, self.P, self.tally, time.thread_time
        prompt = req.prompt
        plen = len(prompt)
        ctx = self.contexts(req) if self.contexts is not None else None
        t0 = cpu()
        m = cache.match_prefix(prompt, ctx)
        hit = m.prefix_len
        node = m.last_node
        prefix = m.indices
        if m.host_node is not None:  # more of the prompt is on host only: load it back
            loaded = cache.load_back(m.host_node)
            if loaded is not None:
                hit += m.host_len
                tally.host_hits += m.host_len
                node = m.host_node
                prefix = torch.from_numpy(np.concatenate([prefix.numpy(), loaded.numpy()]))
        cache.inc_lock_ref(node)
        need = -(-(plen + len(req.output) - hit) // P) * P
        short = need - pool.available_size()
        if short > 0:
            te = cpu()
            tally.evicted += cache.evict(short)
            self.t_evict += cpu() - te
            tally.evict_calls += 1
        new = pool.alloc(need) if need else self.empty
        if new is None:
            cache.dec_lock_ref(node)
            self.t_cache += cpu() - t0
            self.state[req.rid] = None
            tally.host_hits -= hit - m.prefix_len  # a failed admission counts no hit
            tally.record(req, plen, 0, now, admitted=False)
            return
        self.t_cache += cpu() - t0
        # numpy joins the row: torch.cat of large cpu tensors wakes torch's thread
        # pool, which costs far more than the copy on a busy machine.
        row = torch.from_numpy(np.concatenate([prefix.numpy(), new.numpy()]))
        self.state[req.rid] = (hit, node, row, ctx)
        tally.record(req, plen, hit, now, admitted=True)

    def finish(self, req: Request) -> None:
        """Insert prompt + output (and the prompt checkpoint), free the partial page, unlock."""
        st = self.state.pop(req.rid)
        if st is None:
            return
        cache, P = self.cache, self.P
        hit, node, row, ctx = st
        full = req.tokens()
        plen = len(req.prompt)
        L = len(full) // P * P
        Lp = plen // P * P
        pk = req.prompt[:Lp] if self.split_prompt and 0 < Lp < L else None
        prio = req.priority
        t0 = time.thread_time()
        if L:
            cache.insert(full[:L], row[:L], priority=prio, prev_prefix_len=hit, inserted_len=0,
                         context=ctx)
        if pk is not None:
            cache.insert(pk, row[:Lp], priority=prio + 1, prev_prefix_len=Lp, inserted_len=Lp,
                         context=ctx)
        if len(row) > L:
            self.pool.free(row[L:])
        cache.dec_lock_ref(node)
        self.t_cache += time.thread_time() - t0


def _drive(workload: Workload, loop: _Loop, progress: ProgressFn | None) -> tuple[float, float]:
    """Every event of ``workload`` through ``loop``; returns (last event time, wall seconds)."""
    total = workload.num_requests
    step = max(1, total // PROGRESS_STEPS)
    tally, arrive, finish = loop.tally, loop.arrive, loop.finish
    now = 0.0
    wall0 = time.perf_counter()
    for now, kind, req in workload.events():
        if kind == "arrive":
            arrive(req, now)
            if progress is not None:
                done = tally.admitted + tally.failed
                if done % step == 0:
                    progress(done, total)
        else:
            finish(req)
    wall = time.perf_counter() - wall0
    tally.flush(now)
    if progress is not None:
        progress(tally.admitted + tally.failed, total)
    return now, wall


def _result(workload: Workload, s: _Setup, tally: Tally, times: tuple[float, float, float],
            label: str | None, workload_info: dict[str, Any] | None) -> ReplayResult:
    """The figures of a finished replay (the cache's end state included).

    ``times``: CPU seconds in cache operations, CPU seconds in evict, wall seconds.
    """
    cache, pool = s.cache, s.pool
    p50, p90, p99, mean = tally.percentiles()
    n = tally.admitted + tally.failed
    t_cache, t_evict, wall = times
    return ReplayResult(
        workload=workload.name,
        policy=s.name,
        label=label or s.name,
        policy_config=s.run_config.as_dict(),
        config_source=s.run_config.source,
        pool_tokens=s.pool_size,
        page_size=s.page_size,
        requests=n,
        admitted=tally.admitted,
        failed=tally.failed,
        prompt_tokens=tally.prompts,
        hit_tokens=tally.hits,
        uncached_tokens=tally.prompts - tally.hits,
        hit_rate=tally.hits / tally.prompts if tally.prompts else 0.0,
        p50_uncached=p50,
        p90_uncached=p90,
        p99_uncached=p99,
        mean_uncached=mean,
        evicted_tokens=tally.evicted,
        evict_calls=tally.evict_calls,
        eviction_s=t_evict,
        cache_s=t_cache,
        wall_s=wall,
        req_per_s=n / t_cache if t_cache > 0 else 0.0,
        stats=stats_dict(cache.stats),
        tiers=tally.tiers,
        kinds=tally.kinds,
        timeline=tally.timeline,
        end_protected_tokens=cache.protected_size(),
        end_evictable_tokens=cache.evictable_size(),
        end_available_tokens=pool.available_size(),
        host=host_figures(cache, tally),
        workload_info=(
            describe_workload(workload) if workload_info is None
            else copy.deepcopy(workload_info)
        ),
        per_request=tally.records,
    )


def replay(
    workload: Workload,
    policy: str | PolicyRun | EvictionPolicy = DEFAULT_POLICY,
    policy_config: ConfigInput | RunConfig = None,
    *,
    pool_tokens: int | None = None,
    page_size: int = 1,
    progress: ProgressFn | None = None,
    timeline_points: int = TIMELINE_POINTS,
    label: str | None = None,
    split_prompt: bool = True,
    keep_requests: bool = False,
    workload_info: dict[str, Any] | None = None,
    timing: TimingSpec | None = None,
    on_admit: Callable[[Request], None] | None = None,
    host: HostTierSpec | None = None,
    device: str = "cpu",
) -> ReplayResult:
    """Replay ``workload`` through a fresh cache and return its figures.

    ``pool_tokens`` defaults to the workload's ``default_pool_tokens`` and is
    rounded down to whole pages. ``progress(done, total)`` is called about
    200 times (arrivals done / arrivals in the workload), and once at the end.
    ``policy`` is a :class:`~radix_evict.sim.configs.PolicyRun` (its config
    validated when it was built, its label the result's; ``policy_config`` then
    only a :class:`RunConfig` already resolved for this workload, or None), a
    registered name, or a policy object (the oracle's way in: it is no
    registered policy). With a name, ``policy_config`` is a validated config
    object, a dict or JSON string (validated here), a :class:`RunConfig`
    already resolved, or None (see :func:`radix_evict.sim.configs.resolve_config`).
    ``workload_info`` is the workload's ``describe()`` (as JSON types) when the
    caller already has it: several replays of one workload describe it once.
    ``timing`` replays the workload through a continuous-batching server in
    virtual time instead (:mod:`radix_evict.sim.timed`): the result's ``timing``
    holds TTFT, queueing, TPOT, SLO and throughput figures; ``on_admit(request)``
    is called as each request is first admitted (the timed oracle's clock).
    ``host`` adds a host tier (SGLang's HiCache; less than a page: none): a
    match that reaches host-only KV loads it back, and the result's ``host``
    splits the hits between the tiers and counts the traffic. ``device`` is the
    device pool's (``cuda``: index-only slots handed out on the GPU, as an
    engine's; the decisions are the cpu pool's).
    Raises ReplayError if, after the replay, a lock is still held or the pool
    and the tree do not account for every slot.
    """
    if isinstance(policy, PolicyRun) and label is None:
        label = policy.name
    s = _set_up(workload, policy, policy_config, pool_tokens, page_size, host, device)
    tally = Tally(workload.num_requests, timeline_points, keep_requests)
    if timing is not None:
        from radix_evict.sim.timed.run import serve

        figures, times = serve(workload, s.cache, s.pool, s.page_size, timing, tally,
                               split_prompt=split_prompt, progress=progress, on_admit=on_admit,
                               contexts=contexts_for(workload, s.cache))
        _check_accounting(s.cache, s.pool, s.pool_size)
        result = _result(workload, s, tally, times, label, workload_info)
        result.timing = figures
        add_pcie_bytes(result.host, timing.cost_model)
        return result
    loop = _Loop(s, tally, split_prompt, contexts_for(workload, s.cache))
    _, wall = _drive(workload, loop, progress)
    _check_accounting(s.cache, s.pool, s.pool_size)
    result = _result(workload, s, tally, (loop.t_cache, loop.t_evict, wall), label, workload_info)
    add_pcie_bytes(result.host, None)
    return result


def contexts_for(workload: Workload, cache: RadixCache) -> ContextFn | None:
    """The workload's request contexts, when the cache's policy reads them (else None: free)."""
    if getattr(cache.policy, "uses_context", False):
        return workload.context_of
    return None


def host_figures(cache: RadixCache, tally: Tally) -> HostFigures | None:
    """The host tier's figures of a finished replay (None without a host tier)."""
    host = cache.host_tier
    if host is None:
        return None
    st = host.stats
    prompts = tally.prompts
    device_hits = tally.hits - tally.host_hits

    def share(x: int) -> float:
        return x / prompts if prompts else 0.0

    return HostFigures(
        host_tokens=host.size,
        write_policy=host.write_policy,
        write_threshold=host.threshold,
        host_policy=str(host.policy.name),
        device_hit_tokens=device_hits,
        host_hit_tokens=tally.host_hits,
        device_hit_rate=share(device_hits),
        host_hit_rate=share(tally.host_hits),
        miss_rate=share(prompts - tally.hits),
        written_tokens=st.written_tokens,
        loaded_tokens=st.loaded_tokens,
        host_evicted_tokens=st.evicted_tokens,
        host_evictions=st.evicted_nodes,
        reclaimed_tokens=st.reclaimed_tokens,
        dropped_tokens=st.dropped_tokens,
        write_failed_tokens=st.write_failed_tokens,
        load_back_failed_tokens=st.load_back_failed_tokens,
        copy_wait_s=tally.copy_wait_s,
        admission=host.admission.name if host.admission is not None else "none",
        admission_rejected_tokens=(host.admission.rejected_tokens
                                   if host.admission is not None else 0),
        pcie_tokens=st.written_tokens + st.loaded_tokens,
    )


def _check_accounting(cache: RadixCache, pool: KVPool, pool_size: int) -> None:
    """The harness's end-of-replay check: no lock held, no slot leaked or freed twice."""
    if cache.protected_size() != 0:
        raise ReplayError(f"protected_size() {cache.protected_size()} after all dec_lock_ref")
    if pool.available_size() + cache.evictable_size() != pool_size:
        raise ReplayError(
            f"pool.available_size() {pool.available_size()} + evictable_size() "
            f"{cache.evictable_size()} != pool {pool_size} (leaked or double-freed slots)"
        )
    host = cache.host_tier
    if host is not None:
        st = host.stats
        kept = st.written_tokens - st.evicted_tokens - st.reclaimed_tokens - st.dropped_tokens
        if host.used_tokens() != kept:
            raise ReplayError(
                f"host tier holds {host.used_tokens()} tokens but written {st.written_tokens} - "
                f"evicted {st.evicted_tokens} - reclaimed {st.reclaimed_tokens} - dropped "
                f"{st.dropped_tokens} = {kept} (leaked or double-freed host pages)"
            )
