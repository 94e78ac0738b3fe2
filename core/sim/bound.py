"""What is left on the table: the oracle, the infinite-pool ceiling and each policy's share.

``simulate --oracle`` replays, next to the policies, Belady's offline rule
(:mod:`radix_evict.sim.oracle`) and the infinite-pool ceiling
(:mod:`radix_evict.sim.ceiling`), and reports for every policy the share of the
gap from lru to the oracle that it closes::

    gap_closed = (hit_rate - lru_hit_rate) / (oracle_hit_rate - lru_hit_rate)

1 means as good as the oracle, 0 no better than lru, negative worse than lru;
None when the oracle does not beat lru (nothing to close).

In the token replay the oracle is Belady's offline bound on the hit rate.
In the timed replay it is not a bound: the same rule decides evictions, but
timing decides what is admitted when, what is retracted and so the order of
uses, and a policy can beat it on hit rate and on TTFT (issue #36: lru's p99
TTFT 2,176 ms under the oracle's 2,698). There it is reported as what it is,
a Belady-guided replay, and no gap is measured against it (``gap_closed``
None). Where a policy beats even the token oracle, :meth:`Bound.beaten_by`
names it and the reports say so instead of showing a share past 100% as if
the bound held.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.policies.contract import DEFAULT_POLICY
from radix_evict.sim.ceiling import Ceiling, infinite_pool_ceiling
from radix_evict.sim.oracle import ORACLE, oracle_for_order, oracle_workload, prompts_by_rid
from radix_evict.sim.parallel import ProgressFn, run_jobs
from radix_evict.sim.replay import TIMELINE_POINTS, ReplayResult, replay
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

REFERENCE = DEFAULT_POLICY  # what gap_closed measures from: SGLang's default
# What the oracle row is, in words, in each replay (captions, JSON's bound.oracle_is).
ORACLE_BOUND = "offline bound (Belady: farthest next use first), not a servable policy"
ORACLE_TIMED = ("Belady's rule (farthest next use first) deciding evictions in the same "
                "timed replay: a reference, not a bound (timing decides admissions, "
                "retractions and the order of uses, so a policy can beat it on hit rate or "
                "TTFT)")
ORACLE_ROUNDS = 12  # the timed oracle's fixed-point rounds, at most (chat settles in 7)
# How each reference is named wherever it is shown (tables, plots, JSON, generated pages).
ORACLE_NAME = "oracle (offline bound)"
ORACLE_TIMED_NAME = "oracle (Belady-guided)"
CEILING_NAME = "ceiling (infinite pool)"
CEILING_BOUND = ("a pool that never fills: every prompt prefix seen before hits, so no policy, "
                 "pool size, host tier size or write policy hits more in total (device + "
                 "host): a bound")
CEILING_TIMED = ("the timed replay with a pool that never fills (the same arrivals and "
                 "scheduler): a reference, not a proven bound (a finite pool admits later, "
                 "and a later admission can find prompts an earlier one could not)")
GAP_RULE = ("gap closed = share of the lru-to-oracle hit-rate gap, measured only where the "
            "oracle is a bound (the token replay)")


def oracle_name(timed: bool) -> str:
    """The oracle row's or line's name: an offline bound in the token replay, not in the
    timed one."""
    return ORACLE_TIMED_NAME if timed else ORACLE_NAME


def oracle_is(timed: bool) -> str:
    """What the oracle is, in words, in the token replay or the timed one."""
    return ORACLE_TIMED if timed else ORACLE_BOUND


def ceiling_is(timed: bool) -> str:
    """What the infinite-pool ceiling is, in words, in the token replay or the timed one."""
    return CEILING_TIMED if timed else CEILING_BOUND


def references(timed: bool) -> dict[str, Any]:
    """The references of a replay, named (JSON's ``references``): whether each is a bound
    and what it is; a gap is measured only against a bound."""
    return {"oracle": {"name": oracle_name(timed), "is_bound": not timed,
                       "is": oracle_is(timed)},
            "ceiling": {"name": CEILING_NAME, "is_bound": not timed, "is": ceiling_is(timed)},
            "gap_closed": GAP_RULE if not timed else None}


@dataclass
class Bound:
    """One workload's offline bound: the oracle's replay, the ceiling, lru's hit rate."""

    workload: str
    oracle: ReplayResult
    ceiling: Ceiling
    reference_hit_rate: float

    @property
    def is_bound(self) -> bool:
        """Whether the oracle bounds the hit rate: the token replay's does, the timed one's not."""
        return self.oracle.timing is None

    @property
    def oracle_is(self) -> str:
        """What the oracle row is, in words (a caption's, JSON's ``oracle_is``)."""
        return oracle_is(not self.is_bound)

    @property
    def oracle_name(self) -> str:
        """The oracle row's name (``oracle (offline bound)``, ``oracle (Belady-guided)``)."""
        return oracle_name(not self.is_bound)

    def gap_closed(self, hit_rate: float) -> float | None:
        """Share of the lru-to-oracle gap that ``hit_rate`` closes (None: no gap, or an
        oracle that is no bound, the timed one's)."""
        gap = self.oracle.hit_rate - self.reference_hit_rate
        if gap <= 1e-12 or not self.is_bound:
            return None
        return (hit_rate - self.reference_hit_rate) / gap

    def beaten_by(self, results: Sequence[ReplayResult]) -> list[str]:
        """Labels of this workload's results with a higher hit rate than the oracle's."""
        top = self.oracle.hit_rate + 1e-12
        return [r.label for r in results if r.workload == self.workload and r.hit_rate > top]

    def to_dict(self) -> dict[str, Any]:
        return {
            "oracle_hit_rate": self.oracle.hit_rate,
            "oracle_is_bound": self.is_bound,
            "oracle_is": self.oracle_is,
            "ceiling": self.ceiling.to_dict(),
            "reference": REFERENCE,
            "reference_hit_rate": self.reference_hit_rate,
        }


def replay_oracle(
    workload: Workload,
    *,
    pool_tokens: int | None = None,
    page_size: int = 1,
    progress: ProgressFn | None = None,
    timeline_points: int = TIMELINE_POINTS,
    workload_info: dict[str, Any] | None = None,
    timing: TimingSpec | None = None,
) -> ReplayResult:
    """Replay ``workload`` under the oracle through the usual cache, driver and replay loop.

    With ``timing``, the oracle decides evictions in the timed replay: a
    Belady-guided replay, not a bound on hit rate or TTFT (the module's
    docstring says why); :func:`_replay_timed_oracle` says what order it
    foresees.
    """
    if timing is not None:
        return _replay_timed_oracle(workload, timing, pool_tokens=pool_tokens,
                                    page_size=page_size, progress=progress,
                                    timeline_points=timeline_points,
                                    workload_info=workload_info)
    wrapped, oracle = oracle_workload(workload, page_size)
    return replay(
        wrapped,
        oracle,
        pool_tokens=pool_tokens,
        page_size=page_size,
        progress=progress,
        timeline_points=timeline_points,
        label=ORACLE,
        workload_info=workload_info,
    )


def _replay_timed_oracle(workload: Workload, timing: TimingSpec, *, pool_tokens: int | None,
                         page_size: int, progress: ProgressFn | None, timeline_points: int,
                         workload_info: dict[str, Any] | None) -> ReplayResult:
    """Belady in the timed replay, foreseeing the order it will itself admit requests in.

    Belady needs the future order of uses. In the timed replay that order is
    the admission order, and where a session's next turn arrives after its
    previous one finishes, it depends on the evictions themselves. So the
    oracle is replayed to a fixed point: the first round foresees arrival
    order, each next round the order the previous round admitted in, until
    the order it foresaw is the order it served (``self_consistent``), or
    :data:`ORACLE_ROUNDS` rounds. A trace's arrivals do not depend on the
    cache: one round, or two, settles it. ``policy_config`` of the result
    records the rounds.
    """
    prompts = prompts_by_rid(workload)
    order = list(prompts)
    settled = False
    for rounds in range(1, ORACLE_ROUNDS + 1):
        oracle, clock = oracle_for_order(workload, prompts, order, page_size)
        res = replay(workload, oracle, pool_tokens=pool_tokens, page_size=page_size,
                     progress=progress if rounds == 1 else None,
                     timeline_points=timeline_points, label=ORACLE,
                     workload_info=workload_info, timing=timing, keep_requests=True,
                     on_admit=clock)
        assert res.per_request is not None
        served = [r.rid for r in res.per_request]
        settled = served == order
        if settled:
            break
        order = served
    res.per_request = None
    res.policy_config = {"rounds": rounds, "self_consistent": settled}
    return res


def _is_reference(r: ReplayResult) -> bool:
    return r.policy == REFERENCE and not r.policy_config


def compute_bounds(
    workloads: Sequence[Workload],
    results: Sequence[ReplayResult],
    *,
    pool_tokens: int | None = None,
    page_size: int = 1,
    progress: ProgressFn | None = None,
    timeline_points: int = TIMELINE_POINTS,
    workers: int | None = 1,
    infos: Mapping[str, dict[str, Any]] | None = None,
    timing: TimingSpec | None = None,
) -> dict[str, Bound]:
    """The bound of every workload; lru is replayed too where ``results`` lack it.

    ``timing``: the oracle, lru and the ceiling run in the timed replay.
    """
    jobs: list[Callable[[ProgressFn | None], Any]] = []
    sizes: list[int] = []
    plan: list[tuple[str, str]] = []  # (workload, what) per job
    for w in workloads:
        info = (infos or {}).get(w.name) or next(
            (r.workload_info for r in results if r.workload == w.name), None
        )

        def oracle_job(p: ProgressFn | None, w: Workload = w, info: Any = info) -> Any:
            return replay_oracle(w, pool_tokens=pool_tokens, page_size=page_size,
                                 progress=p, timeline_points=timeline_points,
                                 workload_info=info, timing=timing)

        def ceiling_job(_p: ProgressFn | None, w: Workload = w) -> Any:
            return infinite_pool_ceiling(w, page_size, timing)

        jobs += [oracle_job, ceiling_job]
        sizes += [w.num_requests, 0]
        plan += [(w.name, "oracle"), (w.name, "ceiling")]
        if not any(_is_reference(r) and r.workload == w.name for r in results):

            def lru_job(p: ProgressFn | None, w: Workload = w, info: Any = info) -> Any:
                return replay(w, REFERENCE, pool_tokens=pool_tokens, page_size=page_size,
                              progress=p, timeline_points=0, workload_info=info,
                              timing=timing)

            jobs.append(lru_job)
            sizes.append(w.num_requests)
            plan.append((w.name, "reference"))
    done = run_jobs(jobs, sizes, workers, progress)
    parts: dict[str, dict[str, Any]] = {w.name: {} for w in workloads}
    for (name, what), value in zip(plan, done, strict=True):
        parts[name][what] = value
    bounds: dict[str, Bound] = {}
    for name, got in parts.items():
        ref = got.get("reference") or next(
            r for r in results if r.workload == name and _is_reference(r)
        )
        bounds[name] = Bound(name, got["oracle"], got["ceiling"], ref.hit_rate)
    return bounds
