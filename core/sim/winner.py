"""The rule that names the best policy of a set of replays (one rule, used everywhere).

The highest token hit rate wins; policies within :data:`NEAR_TIE` of the best
count as tied, and among them one whose p99 uncached prefill tokens per
request is at least :data:`MIN_TAIL_GAIN` lower than the top's wins instead
(the tail is what users feel as slow first tokens; a smaller gap is noise and
does not justify giving up hit rate). Exact ties go to the order given.
It is applied once, here in core (``MatrixResult.winners``, or a caller's own
call); the CLI's recommendation explains the winner it is given. A replay
that served no request (every one found no room) cannot win.

One exclusion: a policy that orders by request priority
(``EvictionPolicy.orders_by_priority``) does not win a replay whose requests
all had one priority. There the only priorities in the tree that differ come
from the replay's prompt checkpoint insert at priority + 1 (see the replay's
assumptions in ``docs/replay.md``), so its figures measure that artefact, not
the policy's idea.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from radix_evict.errors import RadixEvictError

NEAR_TIE = 0.005  # hit-rate difference (0.5 percentage points) treated as a tie
MIN_TAIL_GAIN = 0.02  # a near-tie goes to the lower tail only if it is 2% lower
WINNER_RULE = (
    f"highest token hit rate; policies within {100 * NEAR_TIE:.1f} points of the best are "
    f"tied, and one of them wins instead if its p99 uncached prefill tokens are at least "
    f"{100 * MIN_TAIL_GAIN:.0f}% lower"
)


class NothingServedError(RadixEvictError, ValueError):
    """No result served a request (every one found no room): there is nothing to rank."""


def served(result: object) -> bool:
    """Whether ``result`` served any request: a replay where every request found no room
    (``admitted`` or ``completed`` 0) measured nothing a policy did, and cannot win."""
    for attr in ("completed", "admitted"):
        n = getattr(result, attr, None)
        if n is not None:
            return bool(n > 0)
    return True


def checkpoint_only(result: object) -> bool:
    """Whether ``result`` is a priority-ordering policy on a one-priority replay.

    ``result.tiers`` (a ReplayResult's requests per priority) tells how many
    priorities the requests had; results without it never count.
    """
    tiers = getattr(result, "tiers", None)
    if tiers is None or len(tiers) != 1:
        return False
    from radix_evict.policies.registry import registry

    try:
        policy = registry.get(str(getattr(result, "policy", "")))
    except RadixEvictError:  # not a registered policy (the oracle), or its plugin is broken
        return False
    return bool(getattr(policy.policy, "orders_by_priority", False))


class Scored(Protocol):
    """What the rule reads from a result (ReplayResult has it)."""

    @property
    def label(self) -> str: ...
    @property
    def policy(self) -> str: ...
    @property
    def hit_rate(self) -> float: ...
    @property
    def p99_uncached(self) -> float: ...


S = TypeVar("S", bound=Scored)


def choose_winner(results: Sequence[S]) -> tuple[S, bool]:
    """(winner, whether the p99 tie-break decided it); the order given breaks exact ties.

    Results that served no request are left out; if none served one,
    NothingServedError (a ValueError) says so.
    """
    if not results:
        raise ValueError("no results to pick a winner from")
    results = [r for r in results if served(r)]
    if not results:
        raise NothingServedError("no replay served a request: every request found no room in "
                                 "the pool, so no policy can be recommended")
    results = [r for r in results if not checkpoint_only(r)] or list(results)
    best = max(r.hit_rate for r in results)
    near = [r for r in results if best - r.hit_rate <= NEAR_TIE + 1e-12]
    top = max(near, key=lambda r: r.hit_rate)
    winner = min(near, key=lambda r: (r.p99_uncached, -r.hit_rate))
    if winner.p99_uncached > top.p99_uncached * (1 - MIN_TAIL_GAIN):
        winner = top
    return winner, winner is not top


OBJECTIVES = ("hit-rate", "ttft-p99", "slo")
OBJECTIVE_RULES = {
    "hit-rate": WINNER_RULE,
    "ttft-p99": "lowest p99 time to first token in the timed replay; equal ones go to the "
                "higher token hit rate",
    "slo": "highest SLO attainment in the timed replay (requests within --slo-ttft and "
           "--slo-tpot); equal ones go to the lower p99 time to first token",
}


class ObjectiveError(RadixEvictError, ValueError):
    """An objective that cannot rank these results (unknown, or its figures are missing)."""


def choose_by_objective(results: Sequence[S], objective: str = "hit-rate") -> tuple[S, bool]:
    """(winner, tie-break) under ``objective`` (one of :data:`OBJECTIVES`).

    ``hit-rate`` is :func:`choose_winner`; ``ttft-p99`` and ``slo`` read the
    timed figures (``result.timing``) and need a timed replay; ``slo`` needs an SLO.
    """
    if objective == "hit-rate":
        return choose_winner(results)
    if objective not in OBJECTIVES:
        raise ObjectiveError(f"unknown objective {objective!r}: use {', '.join(OBJECTIVES)}")
    ran = [r for r in results if served(r)]
    if not ran:
        raise NothingServedError("no replay served a request: nothing to rank")
    timed = [(r, getattr(r, "timing", None)) for r in ran]
    if any(t is None for _, t in timed):
        raise ObjectiveError(f"objective {objective!r} ranks timed replays: add --timing")
    ran = [r for r in ran if not checkpoint_only(r)] or ran
    by_label: dict[str, Any] = {r.label: t for r, t in timed}

    def key(r: S) -> tuple[float, float]:
        t = by_label[r.label]
        if objective == "ttft-p99":
            return (t.ttft_ms.p99, -r.hit_rate)
        if t.slo_attainment is None:
            raise ObjectiveError("objective 'slo' needs an SLO: give --slo-ttft (or --slo-tpot)")
        return (-t.slo_attainment, t.ttft_ms.p99)

    return min(ran, key=key), False
