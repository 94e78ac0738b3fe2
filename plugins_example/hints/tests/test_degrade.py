"""Right hints win; wrong or hostile hints degrade towards lru, never below it by a point.

Small built-in workloads (``chat`` for session ends, ``agentic`` for tool returns)
replay through lru and through each policy with hints from
:mod:`radix_evict.sim.hints` (right, 10% wrong, all wrong) and with hostile
contexts that end every session and ask every prefix to be kept for a day.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import cache

import pytest

from radix_evict import load_policy
from radix_evict.cache.context import RequestContext
from radix_evict.sim.hints import with_hints
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import Request, Workload, get_workload

POINT = 0.01
POOL = {"session": 100_000, "retain": 80_000}


@cache
def _workload(policy: str) -> Workload:
    if policy == "session":
        return get_workload("chat", seed=0, convs=150)
    return get_workload("agentic", seed=0, sessions=40)


def _hit(workload: Workload, policy: str, config: object = None, pool: str = "") -> float:
    """``policy``'s hit rate on ``workload``, in the pool of ``pool`` (default: its own)."""
    return replay(workload, policy, config, pool_tokens=POOL[pool or policy],
                  timeline_points=0).hit_rate


@cache
def _lru(policy: str) -> float:
    """lru on ``policy``'s workload and pool."""
    return _hit(_workload(policy), "lru", None, policy)


def hostile(workload: Workload) -> Workload:
    """Every request claims its session ends, and asks to be kept a day; agents 'return' never."""
    out = copy.copy(workload)
    own = workload.context_of

    def context_of(req: Request) -> RequestContext:
        return replace(own(req), session_end=True, retention_s=86400.0, next_request_s=86400.0)

    setattr(out, "context_of", context_of)  # noqa: B010  (a method replaced on one object)
    return out


@pytest.mark.parametrize("name", ["session", "retain"])
def test_without_hints_it_is_lru(name: str) -> None:
    w = _workload(name)
    lru = replay(w, "lru", pool_tokens=POOL[name], timeline_points=0)
    r = replay(w, name, pool_tokens=POOL[name], timeline_points=0)
    assert (r.hit_rate, r.evicted_tokens) == (lru.hit_rate, lru.evicted_tokens)


def test_right_session_ends_win() -> None:
    assert _hit(with_hints(_workload("session"), "session-end"), "session") > (
        _lru("session") + 5 * POINT)


def test_right_tool_returns_are_trusted_and_kept() -> None:
    policy = load_policy("retain")
    r = replay(with_hints(_workload("retain"), "next-request"), policy,
               pool_tokens=POOL["retain"], timeline_points=0)
    assert policy.trust > 0.3 and policy.right > policy.wrong
    assert r.hit_rate >= _lru("retain")


@pytest.mark.parametrize(("policy", "hints"), [
    ("session", "session-end:error=0.1"),
    ("session", "session-end:error=1"),
    ("session", "session-end:error=0.5,seed=3"),
    ("retain", "next-request:error=0.1"),
    ("retain", "next-request:error=1"),
])
def test_wrong_hints_lose_at_most_a_point(policy: str, hints: str) -> None:
    assert _hit(with_hints(_workload(policy), hints), policy) >= _lru(policy) - POINT


@pytest.mark.parametrize("policy", ["session", "retain"])
def test_hostile_contexts_lose_at_most_a_point(policy: str) -> None:
    assert _hit(hostile(_workload(policy)), policy) >= _lru(policy) - POINT


def test_trusting_blindly_is_what_the_defence_prevents() -> None:
    """The same hostile hints, with trust fixed at 1, do lose (so the tests above can fail)."""
    w = with_hints(_workload("session"), "session-end:error=1")
    assert _hit(w, "session", {"adaptive": False}) < _lru("session") - 5 * POINT
