"""Replay a workload through RadixCache + KVPool, as the side-by-side harness does.

The per-request operation sequence is the harness's (``../peer/sglang_bench.py``,
``replay_radix_evict``), so for the same workload, pool and policy the figures
here equal the harness's radix-evict row:

    arrive:  m = match_prefix(prompt); inc_lock_ref(m.last_node)
             need = round_up(prompt + output - hit, page); evict the shortfall
             new = alloc(need)  (None: unlock, count a failed admission)
    finish:  insert(prompt+output cut to pages, row, priority=p, prev_prefix_len=hit)
             insert(prompt cut to pages, row, priority=p+1, prev_prefix_len=inserted_len=Lp)
             free the partial last page; dec_lock_ref(m.last_node)

A failed admission counts its whole prompt as uncached, as in the harness.
The cache operations are timed in CPU time of the replaying thread, so req/s
does not drop when replays share cores (see ``replay_policies``); ``wall_s``
is wall time. Everything returned has ``to_dict()`` giving plain JSON types.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import numpy as np
import torch

from radix_evict.cache.args import check_int
from radix_evict.cache.pool import KVPool
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.errors import RadixEvictError
from radix_evict.policies.config import ConfigInput
from radix_evict.policies.contract import EvictionPolicy, PolicyConfig
from radix_evict.policies.registry import registry
from radix_evict.sim.configs import NONE, RunConfig, config_dict, describe_workload, resolve_config
from radix_evict.sim.failures import RunFailure, guarded
from radix_evict.sim.parallel import run_jobs
from radix_evict.sim.winner import WINNER_RULE, choose_winner
from radix_evict.sim.workloads import Request, Workload, get_workload

ProgressFn = Callable[[int, int], None]

TIMELINE_POINTS = 50
PROGRESS_STEPS = 200


class ReplayError(RadixEvictError, RuntimeError):
    """The replay left the cache inconsistent: a lock held or a slot leaked."""


@dataclass(frozen=True)
class PolicyRun:
    """One policy and config to replay; ``label`` names it in tables.

    ``config`` is best the policy's validated config object (frozen, so one
    object serves every replay and worker); :func:`as_runs` turns a dict or
    JSON string into one. None: derived from each workload, or the defaults.
    """

    policy: str
    config: PolicyConfig | Mapping[str, Any] | str | None = None
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or self.policy


@dataclass
class TierStats:
    """Hit figures of the requests that share one priority (or one request kind)."""

    key: str
    requests: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hit_rate": self.hit_rate}


@dataclass(frozen=True)
class TimelinePoint:
    """Hit rate of one window of consecutive arrivals (for plots)."""

    requests: int
    time_s: float
    hit_rate: float
    cumulative_hit_rate: float


@dataclass(frozen=True)
class RequestRecord:
    """One request's outcome (kept only with ``replay(..., keep_requests=True)``)."""

    rid: str
    arrival: float
    priority: int
    kind: str
    prompt_tokens: int
    hit_tokens: int
    admitted: bool

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.hit_tokens


@dataclass
class ReplayResult:
    """Figures of one replay; names follow the harness's JSON where it has them."""

    workload: str
    policy: str
    label: str
    policy_config: dict[str, Any] | None
    config_source: str
    pool_tokens: int
    page_size: int
    requests: int
    admitted: int
    failed: int
    prompt_tokens: int
    hit_tokens: int
    uncached_tokens: int
    hit_rate: float
    p50_uncached: float
    p90_uncached: float
    p99_uncached: float
    mean_uncached: float
    evicted_tokens: int
    evict_calls: int
    eviction_s: float  # CPU seconds of this thread inside cache.evict
    cache_s: float  # CPU seconds of this thread inside cache/pool operations (eviction too)
    wall_s: float  # wall seconds of the whole replay loop (workload events, bookkeeping too)
    req_per_s: float  # requests / cache_s: cache-operation throughput per core
    stats: dict[str, Any]
    tiers: dict[int, TierStats]
    kinds: dict[str, TierStats]
    timeline: list[TimelinePoint]
    end_protected_tokens: int = 0
    end_evictable_tokens: int = 0
    end_available_tokens: int = 0
    workload_info: dict[str, Any] = field(default_factory=dict)
    per_request: list[RequestRecord] | None = None

    @property
    def tier_hit_rates(self) -> dict[int, float]:
        """Hit rate per request priority."""
        return {p: t.hit_rate for p, t in sorted(self.tiers.items())}

    def to_dict(self) -> dict[str, Any]:
        skip = ("tiers", "kinds", "timeline", "per_request")
        d: dict[str, Any] = {k: v for k, v in asdict(self).items() if k not in skip}
        d["tiers"] = [{**t.to_dict(), "priority": p} for p, t in sorted(self.tiers.items())]
        d["tier_hit_rates"] = {str(p): r for p, r in self.tier_hit_rates.items()}
        d["kinds"] = {k: t.to_dict() for k, t in sorted(self.kinds.items())}
        d["timeline"] = [asdict(p) for p in self.timeline]
        if self.per_request is not None:
            d["per_request"] = [asdict(r) for r in self.per_request]
        return d


@dataclass
class MatrixResult:
    """Policies x workloads, with a winner per workload."""

    workloads: list[dict[str, Any]]
    policies: list[str]
    results: list[ReplayResult]
    winners: dict[str, str]

    def cell(self, workload: str, label: str) -> ReplayResult:
        for r in self.results:
            if r.workload == workload and r.label == label:
                return r
        raise KeyError((workload, label))

    def to_dict(self) -> dict[str, Any]:
        return {
            "workloads": self.workloads,
            "policies": self.policies,
            "results": [r.to_dict() for r in self.results],
            "winners": dict(self.winners),
            "winner_rule": WINNER_RULE,
        }



TierKey = TypeVar("TierKey", int, str)  # a priority, or a request kind

def _tier(table: dict[TierKey, TierStats], key: TierKey) -> TierStats:
    """The figures of one priority tier or request kind, started on first use."""
    t = table.get(key)
    if t is None:
        t = table[key] = TierStats(str(key))
    return t

class _Tally:
    """Counters kept outside the timed regions (the harness's Tally, plus tiers)."""

    def __init__(self, total: int, points: int, keep: bool) -> None:
        self.records: list[RequestRecord] | None = [] if keep else None
        self.hits = self.prompts = 0
        self.uncached: list[int] = []
        self.admitted = self.failed = 0
        self.evicted = self.evict_calls = 0
        self.tiers: dict[int, TierStats] = {}
        self.kinds: dict[str, TierStats] = {}
        self.window = max(1, math.ceil(total / points)) if points > 0 else 0
        self.win_prompt = self.win_hit = self.win_n = 0
        self.timeline: list[TimelinePoint] = []

    def record(self, req: Request, plen: int, hit: int, now: float, admitted: bool) -> None:
        prio, kind = req.priority, req.kind
        if self.records is not None:
            self.records.append(RequestRecord(req.rid, now, prio, kind, plen, hit, admitted))
        if admitted:
            self.admitted += 1
        else:
            self.failed += 1
        self.hits += hit
        self.prompts += plen
        self.uncached.append(plen - hit)
        for t in (_tier(self.tiers, prio), _tier(self.kinds, kind)):
            t.requests += 1
            t.prompt_tokens += plen
            t.hit_tokens += hit
        if self.window:
            self.win_prompt += plen
            self.win_hit += hit
            self.win_n += 1
            if self.win_n >= self.window:
                self.flush(now)

    def flush(self, now: float) -> None:
        if not self.win_n:
            return
        self.timeline.append(
            TimelinePoint(
                requests=self.admitted + self.failed,
                time_s=now,
                hit_rate=self.win_hit / self.win_prompt if self.win_prompt else 0.0,
                cumulative_hit_rate=self.hits / self.prompts if self.prompts else 0.0,
            )
        )
        self.win_prompt = self.win_hit = self.win_n = 0

    def percentiles(self) -> tuple[float, float, float, float]:
        if not self.uncached:
            return 0.0, 0.0, 0.0, 0.0
        u = np.asarray(self.uncached)
        p50, p90, p99 = (float(np.percentile(u, q)) for q in (50, 90, 99))
        return p50, p90, p99, float(u.mean())


def stats_dict(stats: Any) -> dict[str, Any]:
    """cache.stats as a plain dict, whatever shape the cache gives it."""
    if stats is None:
        return {}
    for attr in ("as_dict", "to_dict", "model_dump", "_asdict"):
        fn = getattr(stats, attr, None)
        if callable(fn):
            return dict(fn())
    if isinstance(stats, Mapping):
        return dict(stats)
    return {k: v for k, v in vars(stats).items() if not k.startswith("_")}


def replay(
    workload: Workload,
    policy: str | EvictionPolicy = "lru",
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
) -> ReplayResult:
    """Replay ``workload`` through a fresh cache and return its figures.

    ``pool_tokens`` defaults to the workload's ``default_pool_tokens`` and is
    rounded down to whole pages. ``progress(done, total)`` is called about
    200 times (arrivals done / arrivals in the workload), and once at the end.
    ``policy`` is a registered name or a policy object (the oracle's way in:
    it is no registered policy). ``policy_config`` is a validated config
    object, a dict or JSON string (validated here), a :class:`RunConfig`
    already resolved, or None (see :func:`radix_evict.sim.configs.resolve_config`).
    ``workload_info`` is the workload's ``describe()`` (as JSON types) when the
    caller already has it: several replays of one workload describe it once.
    Raises ReplayError if, after the replay, a lock is still held or the pool
    and the tree do not account for every slot.
    """
    page_size = check_int("page_size", page_size, 1)
    requested = workload.default_pool_tokens if pool_tokens is None else int(pool_tokens)
    P = page_size
    pool_size = requested // P * P
    if pool_size <= 0:
        raise ValueError(f"pool of {requested} tokens holds no whole page of {P}")
    name = policy if isinstance(policy, str) else policy.name
    if isinstance(policy_config, RunConfig):
        run_config = policy_config
    elif isinstance(policy, str):
        run_config = resolve_config(workload, name, policy_config)
    else:  # a policy object carries its own config
        run_config = RunConfig(None, NONE)
    pool = KVPool(size=pool_size, page_size=P, device="cpu", layers=0)
    if isinstance(policy, str):
        cache = RadixCache(pool, page_size=P, policy=policy, policy_config=run_config.config)
    else:
        cache = RadixCache(pool, page_size=P, policy=policy)

    total = workload.num_requests
    tally = _Tally(total, timeline_points, keep_requests)
    step = max(1, total // PROGRESS_STEPS)
    empty = torch.empty((0,), dtype=torch.int64)
    state: dict[str, tuple[int, Any, torch.Tensor] | None] = {}
    # CPU time of this thread, not wall time: replays in more processes than cores
    # (parallel.plan_workers) are time-sliced, and wall time would count the other
    # processes' turns. It costs ~0.24 us a call against perf_counter's ~0.04 us
    # (a syscall, not the vDSO): ~1 us a request, under 1% of a request's cache time.
    cpu = time.thread_time
    t_cache = t_evict = 0.0
    now = 0.0
    wall0 = time.perf_counter()
    for now, kind, req in workload.events():
        prompt = req.prompt
        plen = len(prompt)
        if kind == "arrive":
            out_len = len(req.output)
            t0 = cpu()
            m = cache.match_prefix(prompt)
            hit = m.prefix_len
            node = m.last_node
            cache.inc_lock_ref(node)
            need = -(-(plen + out_len - hit) // P) * P
            short = need - pool.available_size()
            if short > 0:
                te = cpu()
                tally.evicted += cache.evict(short)
                t_evict += cpu() - te
                tally.evict_calls += 1
            new = pool.alloc(need) if need else empty
            if new is None:
                cache.dec_lock_ref(node)
                t_cache += cpu() - t0
                state[req.rid] = None
                tally.record(req, plen, 0, now, admitted=False)
            else:
                prefix = m.indices
                t_cache += cpu() - t0
                # numpy joins the row: torch.cat of large cpu tensors wakes torch's thread
                # pool, which costs far more than the copy on a busy machine.
                row = torch.from_numpy(np.concatenate([prefix.numpy(), new.numpy()]))
                state[req.rid] = (hit, node, row)
                tally.record(req, plen, hit, now, admitted=True)
            done = tally.admitted + tally.failed
            if progress is not None and done % step == 0:
                progress(done, total)
            continue
        st = state.pop(req.rid)
        if st is None:
            continue
        hit, node, row = st
        full = req.tokens()
        L = len(full) // P * P
        Lp = plen // P * P
        fk = full[:L]
        pk = prompt[:Lp] if split_prompt and 0 < Lp < L else None
        prio = req.priority
        t0 = cpu()
        if L:
            cache.insert(fk, row[:L], priority=prio, prev_prefix_len=hit, inserted_len=0)
        if pk is not None:
            cache.insert(pk, row[:Lp], priority=prio + 1, prev_prefix_len=Lp, inserted_len=Lp)
        if len(row) > L:
            pool.free(row[L:])
        cache.dec_lock_ref(node)
        t_cache += cpu() - t0
    wall = time.perf_counter() - wall0
    tally.flush(now)
    if progress is not None:
        progress(tally.admitted + tally.failed, total)
    _check_accounting(cache, pool, pool_size)
    p50, p90, p99, mean = tally.percentiles()
    n = tally.admitted + tally.failed
    return ReplayResult(
        workload=workload.name,
        policy=name,
        label=label or name,
        policy_config=run_config.as_dict(),
        config_source=run_config.source,
        pool_tokens=pool_size,
        page_size=P,
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
        workload_info=(
            describe_workload(workload) if workload_info is None
            else copy.deepcopy(workload_info)
        ),
        per_request=tally.records,
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


RunSpec = str | PolicyRun | tuple[str, PolicyConfig | Mapping[str, Any] | str | None]


def as_runs(policies: Iterable[RunSpec]) -> list[PolicyRun]:
    """Normalise names, (name, config) pairs and PolicyRuns; make labels unique.

    Each config is validated here, once, into its policy's config object
    (raises PolicyConfigError for a bad one); the replays share that object.
    """
    runs: list[PolicyRun] = []
    for p in policies:
        if isinstance(p, str):
            p = PolicyRun(p)
        elif not isinstance(p, PolicyRun):
            p = PolicyRun(*p)
        if p.config is not None and not isinstance(p.config, PolicyConfig):
            p = PolicyRun(p.policy, registry.parse_config(p.policy, p.config), p.label)
        runs.append(p)
    names = [r.name for r in runs]
    out = []
    for r in runs:
        if r.label is None and names.count(r.name) > 1 and isinstance(r.config, PolicyConfig):
            keys = ",".join(f"{k}={v}" for k, v in sorted(config_dict(r.config).items()))
            r = PolicyRun(r.policy, r.config, f"{r.policy}[{keys}]")
        out.append(r)
    labels = [r.name for r in out]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ValueError(f"policy runs with the same label: {', '.join(dupes)}")
    return out


def _replay_jobs(
    pairs: Sequence[tuple[Workload, PolicyRun]],
    pool_tokens: int | None,
    page_size: int,
    timeline_points: int,
    infos: Mapping[int, dict[str, Any]],
    keep_going: bool = False,
) -> list[Callable[[ProgressFn | None], ReplayResult | RunFailure]]:
    """One job per (workload, run); ``infos`` is each workload's description, by id().

    Configs are resolved here, in this process, so forked workers share the
    validated (and derived) config objects instead of each building its own.
    ``keep_going``: a job that raises returns a RunFailure instead (see
    :mod:`radix_evict.sim.failures`), so the other jobs run to the end.
    """

    def job(w: Workload, run: PolicyRun) -> Callable[[ProgressFn | None], ReplayResult]:
        resolved = resolve_config(w, run.policy, run.config)
        return lambda progress: replay(
            w,
            run.policy,
            resolved,
            pool_tokens=pool_tokens,
            page_size=page_size,
            progress=progress,
            timeline_points=timeline_points,
            label=run.name,
            workload_info=infos[id(w)],
        )

    if not keep_going:
        return [job(w, run) for w, run in pairs]
    return [guarded(job(w, run), workload=w.name, label=run.name, policy=run.policy)
            for w, run in pairs]


def _split(
    out: Sequence[ReplayResult | RunFailure], failures: list[RunFailure] | None
) -> list[ReplayResult]:
    """The results; the failures go to ``failures``."""
    if failures is not None:
        failures.extend(r for r in out if isinstance(r, RunFailure))
    return [r for r in out if isinstance(r, ReplayResult)]


def replay_policies(
    workload: Workload,
    policies: Iterable[RunSpec] | None = None,
    *,
    pool_tokens: int | None = None,
    page_size: int = 1,
    progress: ProgressFn | None = None,
    timeline_points: int = TIMELINE_POINTS,
    workers: int | None = 1,
    failures: list[RunFailure] | None = None,
) -> list[ReplayResult]:
    """Replay one workload once per policy (x config); progress spans all of them.

    ``workers`` > 1 runs the policies in parallel processes (None: as many
    as :func:`radix_evict.sim.parallel.plan_workers` picks for this machine); the
    figures are the same either way. With a ``failures`` list, a run that
    raises (a policy whose ``score()`` fails, say) is appended there and left
    out of the results, and the other runs complete; without, it raises.
    """
    runs = as_runs(default_policies() if policies is None else policies)
    # Described here once, not in each worker (a trace's description takes ~0.2 s).
    infos = {id(workload): describe_workload(workload)}
    pairs = [(workload, r) for r in runs]
    jobs = _replay_jobs(pairs, pool_tokens, page_size, timeline_points, infos,
                        keep_going=failures is not None)
    out = run_jobs(jobs, [workload.num_requests] * len(runs), workers, progress)
    return _split(out, failures)


def default_policies() -> list[str]:
    """What runs when no policy is named: the registry's own choices (extensions when asked)."""
    return registry.own_choices()


def policy_matrix(
    workloads: Iterable[str | Workload],
    policies: Iterable[RunSpec] | None = None,
    *,
    seed: int = 0,
    pool_tokens: int | None = None,
    page_size: int = 1,
    progress: ProgressFn | None = None,
    timeline_points: int = TIMELINE_POINTS,
    workers: int | None = 1,
    failures: list[RunFailure] | None = None,
) -> MatrixResult:
    """Replay every workload under every policy; name a winner per workload.

    Workload names are built with ``get_workload(name, seed=seed)``;
    ``pool_tokens=None`` uses each workload's own default pool. With a
    ``failures`` list, a run that raises goes there, and its label is left
    out of the whole matrix (a column with holes compares nothing).
    """
    wls = [get_workload(w, seed=seed) if isinstance(w, str) else w for w in workloads]
    runs = as_runs(default_policies() if policies is None else policies)
    infos = {id(w): describe_workload(w) for w in wls}
    pairs = [(w, r) for w in wls for r in runs]
    jobs = _replay_jobs(pairs, pool_tokens, page_size, timeline_points, infos,
                        keep_going=failures is not None)
    out = run_jobs(jobs, [w.num_requests for w, _ in pairs], workers, progress)
    failed = {f.label for f in out if isinstance(f, RunFailure)}
    results = [r for r in _split(out, failures) if r.label not in failed]
    labels = [r.name for r in runs if r.name not in failed]
    winners: dict[str, str] = {}
    for w in wls:
        cells = [r for r in results if r.workload == w.name]
        if cells:
            winners[w.name] = choose_winner(cells)[0].label
    return MatrixResult(
        workloads=[infos[id(w)] for w in wls],
        policies=labels,
        results=results,
        winners=winners,
    )
