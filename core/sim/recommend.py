"""Which policy to run, and one honest sentence saying why, with the numbers.

The rule itself is the core's (:mod:`radix_evict.sim.winner`: highest hit rate,
near-ties to a clearly lower p99 tail; for timed replays the objective's rule),
applied there once; this module only explains the choice it is given. When
lru, SGLang's default, wins, the sentence says so plainly: switching policies
would not help. ``simulate`` prints these sentences and puts them in its JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.policies.contract import DEFAULT_POLICY
from radix_evict.sim.results import MatrixResult, ReplayResult
from radix_evict.sim.winner import (
    NEAR_TIE,
    NothingServedError,
    Scored,
    checkpoint_only,
    choose_by_objective,
    choose_winner,
    served,
)
from radix_evict.sim.winner import WINNER_RULE as RULE

__all__ = ["NOTHING_SERVED", "RULE", "Recommendation", "recommend", "recommend_timed",
           "recommend_workloads"]


@dataclass(frozen=True)
class Recommendation:
    """The winner's label and the sentence explaining it."""

    policy: str
    reason: str
    tie_break: bool

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "reason": self.reason, "tie_break": self.tie_break,
                "rule": RULE}


def _same(a: Scored, b: Scored) -> bool:
    return abs(a.hit_rate - b.hit_rate) < 1e-12 and abs(a.p99_uncached - b.p99_uncached) < 1e-9


def _p(x: float) -> str:
    return f"{100 * x:.1f}%"


def _t(x: float) -> str:
    return f"{x:,.0f}"


def _checkpoint_note(passed: Sequence[Scored], winner: Scored) -> str:
    """Why a priority-ordering policy with the better figures is not the recommendation."""
    better = [r for r in passed if r.hit_rate > winner.hit_rate]
    if not better:
        return ""
    r = max(better, key=lambda x: x.hit_rate)
    (prio,) = getattr(r, "tiers", {0: None})
    return (f"; {r.label} gets {_p(r.hit_rate)} but is not recommended: every request has "
            f"priority {prio}, so what sets it apart from plain recency is only the "
            f"replay's prompt checkpoint insert at priority + 1, not request priorities "
            f"(see the replay's assumptions in docs/replay.md)")


def recommend(results: Sequence[Scored], choice: tuple[Scored, bool] | None = None
              ) -> Recommendation:
    """Explain the winner in one sentence with hit rates and p99 uncached tokens.

    ``choice`` is the core's (winner, tie-break) when the caller has it
    (``MatrixResult.winners``); otherwise the core's rule is asked here. Results
    that served no request are not compared (NothingServedError if none did).
    """
    results = [r for r in results if served(r)] or list(results)
    rec = _recommend(results, choice or choose_winner(results))
    passed = [r for r in results if checkpoint_only(r)]
    winner = next(r for r in results if r.label == rec.policy)
    note = _checkpoint_note(passed, winner)
    return Recommendation(rec.policy, rec.reason + note, rec.tie_break) if note else rec


def _recommend(results: Sequence[Scored], choice: tuple[Scored, bool]) -> Recommendation:
    winner, tie_break = choice
    results = [r for r in results if r is winner or not checkpoint_only(r)]
    others = [r for r in results if r is not winner]
    w = winner.label
    if not others:
        reason = (f"it is the only policy simulated: token hit rate {_p(winner.hit_rate)}, "
                  f"p99 uncached prefill {_t(winner.p99_uncached)} tokens per request")
        return Recommendation(w, reason, False)
    runner = max(others, key=lambda r: (r.hit_rate, -r.p99_uncached))
    if all(_same(r, winner) for r in others):
        evicted = [getattr(r, "evicted_tokens", None) for r in results]
        why = ("nothing was evicted, so the pool never made a policy choose; try a smaller "
               "--pool-tokens" if all(e == 0 for e in evicted) else
               "the policies made equivalent choices on this workload")
        reason = (f"all {len(results)} policies tie at token hit rate {_p(winner.hit_rate)} and "
                  f"p99 uncached prefill {_t(winner.p99_uncached)} tokens per request ({why}); "
                  f"{w} is listed first")
        if winner.policy == DEFAULT_POLICY:
            reason += ", and it is SGLang's default"
        return Recommendation(w, reason, False)
    if tie_break:
        top = max(others, key=lambda r: r.hit_rate)
        reason = (f"its token hit rate {_p(winner.hit_rate)} is within "
                  f"{100 * NEAR_TIE:.1f} points of {top.label}'s {_p(top.hit_rate)} and its p99 "
                  f"uncached prefill is lower ({_t(winner.p99_uncached)} vs "
                  f"{_t(top.p99_uncached)} tokens per request)")
        if top.policy == DEFAULT_POLICY:
            reason += ("; lru, SGLang's default, has the slightly higher hit rate, so keeping it "
                       "costs little")
    else:
        gap = 100 * (winner.hit_rate - runner.hit_rate)
        who = runner.label + (" (SGLang's default)" if runner.policy == DEFAULT_POLICY else "")
        reason = (f"highest token hit rate, {_p(winner.hit_rate)} vs {_p(runner.hit_rate)} "
                  f"for {who}, +{gap:.1f} points; p99 uncached prefill "
                  f"{_t(winner.p99_uncached)} vs {_t(runner.p99_uncached)} tokens per request")
    if winner.policy == DEFAULT_POLICY:
        reason += "; lru is SGLang's default, so keep it: no other policy beats plain recency here"
    else:
        lru = next((r for r in others if r.policy == DEFAULT_POLICY), None)
        if lru is not None and lru is not runner:
            reason += (f"; lru, SGLang's default, gets {_p(lru.hit_rate)} and p99 "
                       f"{_t(lru.p99_uncached)}")
    return Recommendation(w, reason, tie_break)


NOTHING_SERVED = ("no replay served a request: every request found no room in the pool even "
                  "after eviction, so there is nothing to compare and no policy to recommend; "
                  "give a larger --pool-tokens")


def _ms(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def recommend_timed(results: Sequence[ReplayResult], objective: str) -> Recommendation:
    """The winner of timed replays under ``objective``, explained with its figures and the
    hit-rate verdict (NothingServedError if none served a request, ObjectiveError for an
    objective the results cannot rank)."""
    if objective == "hit-rate":
        rec = recommend(results)
        return Recommendation(rec.policy, rec.reason + " (objective: hit-rate)", rec.tie_break)
    winner, _ = choose_by_objective(results, objective)
    others = [r for r in results if r is not winner]
    w = winner.timing
    if objective == "ttft-p99":
        what = f"lowest p99 TTFT, {_ms(w.ttft_ms.p99)} ms"
        if others:
            runner = min(others, key=lambda r: r.timing.ttft_ms.p99)
            gain = 1 - w.ttft_ms.p99 / runner.timing.ttft_ms.p99 if runner.timing.ttft_ms.p99 else 0
            what += (f" vs {_ms(runner.timing.ttft_ms.p99)} ms for {runner.label} "
                     f"({100 * gain:.1f}% lower)")
    else:
        what = f"highest SLO attainment, {_p(w.slo_attainment or 0.0)}"
        if others:
            runner = max(others, key=lambda r: r.timing.slo_attainment or 0.0)
            what += f" vs {_p(runner.timing.slo_attainment or 0.0)} for {runner.label}"
    reason = f"{what}; token hit rate {_p(winner.hit_rate)} (objective: {objective})"
    try:
        by_hits, _ = choose_by_objective(results, "hit-rate")
    except NothingServedError:
        by_hits = winner
    if by_hits is not winner:
        reason += (f"; ranked by hit rate, {by_hits.label} would win with "
                   f"{_p(by_hits.hit_rate)}, but its p99 TTFT is "
                   f"{_ms(by_hits.timing.ttft_ms.p99)} ms: the timed verdict differs "
                   "(docs/choosing.md says why)")
    return Recommendation(winner.label, reason, False)


def recommend_workloads(names: Sequence[str], results: Sequence[ReplayResult],
                        matrix: MatrixResult | None = None, *, timed: bool = False,
                        objective: str = "hit-rate") -> dict[str, Recommendation]:
    """The recommendation for each workload, in order: the one workload's (``matrix`` None),
    or each workload's the matrix named a winner for (its winner explained, not chosen
    again; a timed one under ``objective``). NothingServedError when there is none."""
    if matrix is None:
        (name,) = names
        return {name: recommend_timed(results, objective) if timed else recommend(results)}
    named = [w for w in names if w in matrix.winners]  # the core named each winner
    if not named:
        raise NothingServedError(NOTHING_SERVED)
    cells = {w: [r for r in results if r.workload == w] for w in named}
    if timed:
        return {w: recommend_timed(cells[w], objective) for w in named}
    return {w: recommend(cells[w], (matrix.cell(w, matrix.winners[w]),
                                    matrix.tie_breaks.get(w, False))) for w in named}
