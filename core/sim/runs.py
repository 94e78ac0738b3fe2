"""Running many replays: policies x configs x workloads, in parallel, with a winner each.

:func:`run_replays` is the one loop every caller uses: it resolves each
run's config once, in this process (forked workers share the validated and
derived config objects), and runs one job per (workload, run) on
:func:`radix_evict.sim.parallel.run_jobs`. Token replays
(:func:`replay_policies`, :func:`policy_matrix`) and the CLI's engine replays
(``simulate --model tiny``) differ only in the replay function they give it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.policies.contract import PolicyConfig
from radix_evict.policies.registry import registry
from radix_evict.sim.configs import PolicyRun, RunConfig, config_dict, describe_workload
from radix_evict.sim.failures import RunFailure, guarded
from radix_evict.sim.parallel import ProgressFn, run_jobs
from radix_evict.sim.replay import TIMELINE_POINTS, replay
from radix_evict.sim.results import MatrixResult, ReplayResult
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import choose_by_objective, served
from radix_evict.sim.workloads import Workload, get_workload

T = TypeVar("T")
# (workload, run, its resolved config, progress) -> one replay's result
ReplayFn = Callable[[Workload, "PolicyRun", RunConfig, "ProgressFn | None"], T]


RunSpec = str | PolicyRun | tuple[str, PolicyConfig | Mapping[str, Any] | str | None]


def as_runs(policies: Iterable[RunSpec]) -> list[PolicyRun]:
    """Names, (name, config) pairs and PolicyRuns as PolicyRuns with unique labels.

    A PolicyRun is already validated (it is parsed when built) and passes as
    it is; a name or a pair becomes one here (PolicyConfigError for a bad
    config). Repeats of one policy are labelled by their configs; two runs
    with one label raise ValueError.
    """
    runs = [p if isinstance(p, PolicyRun) else PolicyRun(p) if isinstance(p, str)
            else PolicyRun.parse(*p) for p in policies]
    names = [r.name for r in runs]
    out = []
    for r in runs:
        if r.label is None and names.count(r.name) > 1 and r.config is not None:
            keys = ",".join(f"{k}={v}" for k, v in sorted(config_dict(r.config).items()))
            r = PolicyRun(r.policy, r.config, f"{r.policy}[{keys}]")
        out.append(r)
    labels = [r.name for r in out]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ValueError(f"policy runs with the same label: {', '.join(dupes)}")
    return out


def run_replays(
    pairs: Sequence[tuple[Workload, PolicyRun]],
    replay_fn: ReplayFn[T],
    *,
    sizes: Sequence[int] | None = None,
    workers: int | None = 1,
    progress: ProgressFn | None = None,
    keep_going: bool = False,
) -> list[T | RunFailure]:
    """``replay_fn`` once per (workload, run), in order; each config resolved here, once.

    ``sizes`` weighs each job's progress (default: its workload's requests).
    ``keep_going``: a job that raises returns a RunFailure instead (see
    :mod:`radix_evict.sim.failures`), so the other jobs run to the end.
    """

    def job(w: Workload, run: PolicyRun) -> Callable[[ProgressFn | None], T]:
        resolved = run.on(w)
        return lambda report: replay_fn(w, run, resolved, report)

    jobs: list[Callable[[ProgressFn | None], Any]] = [job(w, run) for w, run in pairs]
    if keep_going:
        jobs = [guarded(j, workload=w.name, label=run.name, policy=run.policy)
                for j, (w, run) in zip(jobs, pairs, strict=True)]
    weights = list(sizes) if sizes is not None else [w.num_requests for w, _ in pairs]
    return run_jobs(jobs, weights, workers, progress)


def _token_replay(pool_tokens: int | None, page_size: int, timeline_points: int,
                  infos: Mapping[int, dict[str, Any]],
                  timing: TimingSpec | None = None,
                  host: HostTierSpec | None = None) -> ReplayFn[ReplayResult]:
    """The token replay as a :data:`ReplayFn`; ``infos``: each workload's description, by id()."""

    def run(w: Workload, r: PolicyRun, resolved: RunConfig,
            progress: ProgressFn | None) -> ReplayResult:
        return replay(w, r, resolved, pool_tokens=pool_tokens, page_size=page_size,
                      progress=progress, timeline_points=timeline_points,
                      workload_info=infos[id(w)], timing=timing, host=host)

    return run


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
    timing: TimingSpec | None = None,
    host: HostTierSpec | None = None,
) -> list[ReplayResult]:
    """Replay one workload once per policy (x config); progress spans all of them.

    ``workers`` > 1 runs the policies in parallel processes (None: as many
    as :func:`radix_evict.sim.parallel.plan_workers` picks for this machine); the
    figures are the same either way. With a ``failures`` list, a run that
    raises (a policy whose ``score()`` fails, say) is appended there and left
    out of the results, and the other runs complete; without, it raises.
    ``timing`` makes every replay a timed one (:mod:`radix_evict.sim.timed`);
    ``host`` gives every replay a host tier (:mod:`radix_evict.cache.host_tier`).
    """
    runs = as_runs(default_policies() if policies is None else policies)
    # Described here once, not in each worker (a trace's description takes ~0.2 s).
    infos = {id(workload): describe_workload(workload)}
    fn = _token_replay(pool_tokens, page_size, timeline_points, infos, timing, host)
    out = run_replays([(workload, r) for r in runs], fn, workers=workers, progress=progress,
                      keep_going=failures is not None)
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
    timing: TimingSpec | None = None,
    objective: str = "hit-rate",
    host: HostTierSpec | None = None,
) -> MatrixResult:
    """Replay every workload under every policy; name a winner per workload.

    Workload names are built with ``get_workload(name, seed=seed)``;
    ``pool_tokens=None`` uses each workload's own default pool. With a
    ``failures`` list, a run that raises goes there, and its label is left
    out of the whole matrix (a column with holes compares nothing). ``timing``
    makes every replay a timed one, ``host`` a two-tier one; ``objective`` is
    what names the winners (:func:`radix_evict.sim.winner.choose_by_objective`).
    """
    wls = [get_workload(w, seed=seed) if isinstance(w, str) else w for w in workloads]
    runs = as_runs(default_policies() if policies is None else policies)
    infos = {id(w): describe_workload(w) for w in wls}
    fn = _token_replay(pool_tokens, page_size, timeline_points, infos, timing, host)
    out = run_replays([(w, r) for w in wls for r in runs], fn, workers=workers,
                      progress=progress, keep_going=failures is not None)
    failed = {f.label for f in out if isinstance(f, RunFailure)}
    results = [r for r in _split(out, failures) if r.label not in failed]
    labels = [r.name for r in runs if r.name not in failed]
    winners: dict[str, str] = {}
    tie_breaks: dict[str, bool] = {}
    for w in wls:
        cells = [r for r in results if r.workload == w.name]
        if any(served(r) for r in cells):  # nothing admitted anywhere: no winner to name
            best, tie_breaks[w.name] = choose_by_objective(cells, objective)
            winners[w.name] = best.label
    return MatrixResult(
        workloads=[infos[id(w)] for w in wls],
        policies=labels,
        results=results,
        winners=winners,
        tie_breaks=tie_breaks,
    )
