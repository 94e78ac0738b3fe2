"""``retain``'s order: ``soonest`` ranks the agent returning soonest highest (the latest-returning
sessions go first, whole), ``latest`` the other way round; both within the horizon and trust."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from radix_evict_hints.retain import RetainConfig, RetainPolicy


@dataclass
class Ctx:
    arrival: float
    next_request_s: float | None = None
    retention_s: float | None = None


@dataclass(eq=False)
class Node:
    last_access_time: float
    context: Ctx
    num_tokens: int = 10
    extra: dict[str, float] = field(default_factory=dict)


def _scores(order: str, waits: list[float]) -> list[float]:
    policy = RetainPolicy(RetainConfig(order=order, budget=1.0, adaptive=False))
    policy.rate, policy.mean_age, policy._high = 10.0, 100.0, 10_000  # ticks/s; horizon 800
    nodes = [Node(50.0, Ctx(5.0, w)) for w in waits]
    for n in nodes:
        policy.on_insert(n)  # type: ignore[arg-type]
    return [policy.score(n) for n in nodes]  # type: ignore[arg-type]


def test_soonest_ranks_the_soonest_return_highest_and_latest_the_other_way() -> None:
    waits = [2.0, 10.0, 30.0, 100.0]  # seconds; x margin 1.5 x 10 ticks/s: 30..1,500 ticks
    soonest, latest = _scores("soonest", waits), _scores("latest", waits)
    assert soonest == sorted(soonest, reverse=True) and soonest[0] > soonest[1]
    assert latest == sorted(latest) and latest[0] < latest[1]
    # beyond the horizon (800 ticks): no extension in soonest, the cap in latest
    assert soonest[-1] == 50.0 and latest[-1] == 50.0 + 800.0
    assert soonest[0] == pytest.approx(50.0 + 800.0 - 30.0)


def test_an_unhinted_node_is_lru() -> None:
    assert _scores("soonest", [0.0]) == [50.0]


def test_order_is_checked_strictly() -> None:
    with pytest.raises(ValueError, match="order"):
        RetainConfig(order="first")  # type: ignore[arg-type]
