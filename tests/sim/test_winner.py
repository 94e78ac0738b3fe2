"""simulate does not recommend a priority-ordering policy on a one-priority workload."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from radix_evict.sim.recommend import recommend
from radix_evict.sim.replay import policy_matrix, replay_policies
from radix_evict.sim.winner import checkpoint_only, choose_winner
from radix_evict.sim.workloads import get_workload

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


@dataclass
class Row:
    label: str
    hit_rate: float
    p99_uncached: float
    tiers: dict[int, object] = field(default_factory=lambda: {0: None})

    @property
    def policy(self) -> str:
        return self.label


def test_priority_is_passed_over_when_every_request_has_one_priority() -> None:
    rows = [Row("lru", 0.50, 900), Row("priority", 0.60, 800), Row("tlru", 0.52, 900)]
    assert [checkpoint_only(r) for r in rows] == [False, True, False]
    assert choose_winner(rows)[0].label == "tlru"
    rec = recommend(rows)
    assert rec.policy == "tlru"
    assert "priority gets 60.0% but is not recommended" in rec.reason
    assert "checkpoint insert at priority + 1" in rec.reason
    assert "+2.0 points" in rec.reason  # measured against lru, not against the passed-over one


def test_priority_still_wins_where_requests_have_several_priorities() -> None:
    rows = [
        Row("lru", 0.50, 900, {0: None, 1: None}),
        Row("priority", 0.60, 800, {0: None, 1: None}),
    ]
    assert not any(checkpoint_only(r) for r in rows)
    rec = recommend(rows)
    assert rec.policy == "priority" and "not recommended" not in rec.reason


def test_only_priority_simulated_is_still_reported() -> None:
    rec = recommend([Row("priority", 0.6, 800)])
    assert rec.policy == "priority"


def test_on_a_real_one_priority_workload_the_matrix_and_the_cli_agree() -> None:
    wl = get_workload("popularity-shift", requests=800)
    rows = replay_policies(wl, ["lru", "priority"])
    assert rows[1].hit_rate > rows[0].hit_rate, "priority wins here only by the checkpoint"
    assert list(rows[1].tiers) == [0]
    rec = recommend(rows)
    assert rec.policy == "lru" and "priority gets" in rec.reason
    m = policy_matrix([wl], ["lru", "priority"])
    assert m.winners[wl.name] == "lru"
