"""The simple routers' choices: round_robin, random (seeded), least_load, session."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from radix_evict.sim.fleet.registry import build_router
from radix_evict.sim.fleet.router import RoutedRequest


@dataclass
class _View:
    index: int
    in_flight: int = 0
    waiting: int = 0
    running: int = 0
    pending_prefill_tokens: int = 0
    active_kv_tokens: int = 0

    def cached_prefix(self, key):
        return 0


def _req(i: int, session=None) -> RoutedRequest:
    return RoutedRequest(i, float(i), (1, 2, 3), session, 3, 1)


def _views(*loads: int) -> list[_View]:
    return [_View(i, n) for i, n in enumerate(loads)]


def test_round_robin_cycles_in_arrival_order():
    r = build_router("round_robin", None, replicas=3)
    views = _views(5, 0, 0)
    assert [r.route(_req(i), views) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_random_is_seeded_and_in_range():
    views = _views(0, 0, 0, 0)
    a = build_router("random", None, replicas=4, seed=7)
    b = build_router("random", None, replicas=4, seed=7)
    c = build_router("random", None, replicas=4, seed=8)
    da = [a.route(_req(i), views) for i in range(200)]
    assert da == [b.route(_req(i), views) for i in range(200)]
    assert da != [c.route(_req(i), views) for i in range(200)]
    assert set(da) == {0, 1, 2, 3}


@pytest.mark.parametrize(("loads", "want"), [((3, 1, 2), 1), ((2, 1, 1), 1), ((0, 0, 0), 0),
                                            ((4, 4, 3), 2)])
def test_least_load_takes_the_fewest_in_flight_the_lowest_index_on_a_tie(loads, want):
    r = build_router("least_load", None, replicas=len(loads))
    assert r.route(_req(0), _views(*loads)) == want


def test_session_sticks_and_a_request_without_one_goes_least_loaded():
    r = build_router("session", None, replicas=3)
    assert r.route(_req(0, session=10), _views(1, 0, 2)) == 1
    assert r.route(_req(1, session=10), _views(0, 5, 0)) == 1  # sticky, whatever the load
    assert r.route(_req(2, session=11), _views(0, 5, 0)) == 0
    assert r.route(_req(3, session=None), _views(2, 2, 1)) == 2
    assert r.route(_req(4, session="a"), _views(2, 2, 1)) == 2
    assert r.route(_req(5, session=11), _views(9, 0, 0)) == 0
