"""``retain`` judges a hint by the time it asked for, not by the extension its cap allowed.

A protection the cap cut short and the client came back after is the cap's
doing: true hints must keep their trust under a tight cap, and wrong ones
(all wrong) must still lose it.
"""

from __future__ import annotations

from radix_evict import load_policy
from radix_evict.sim.hints import with_hints
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

TIGHT = {"max_extension": 0.25}


def _trust(hints: str) -> float:
    policy = load_policy("retain", TIGHT)
    w = with_hints(get_workload("agentic", seed=0, sessions=40), hints)
    replay(w, policy, pool_tokens=80_000, timeline_points=0)
    return float(policy.trust)


def test_true_hints_keep_trust_under_a_tight_cap() -> None:
    assert _trust("next-request") > 0.4


def test_wrong_hints_lose_trust_under_a_tight_cap() -> None:
    assert _trust("next-request:error=1") < 0.1
