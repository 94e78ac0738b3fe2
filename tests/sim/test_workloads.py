"""Workload generators: determinism, event invariants, and parameters doing what they say."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from helpers.peer_harness import harness_args, load_harness
from hypothesis import given
from hypothesis import strategies as st

from radix_evict.builtin_policies.tlru import derive_config as derive_tlru
from radix_evict.builtin_policies.tlru import threshold_rule
from radix_evict.sim.configs import describe_workload
from radix_evict.sim.workloads import (
    WORKLOADS,
    SessionWorkload,
    Workload,
    WorkloadError,
    get_workload,
    param_docs,
    workload_names,
)
from radix_evict.sim.workloads.base import USER_HDR, service_time
from radix_evict.sim.workloads.common import round_pool

# Small versions of every workload, so that each test takes milliseconds.
SMALL: dict[str, dict[str, Any]] = {
    "chat": {"convs": 40},
    "hot-set-with-scans": {"hot_requests": 300, "scan_every": 100},
    "popularity-shift": {"requests": 300},
    "priority-tiers": {"requests": 300},
    "agentic": {"sessions": 8},
}


def small(name: str, seed: int = 0, **extra: Any) -> SessionWorkload:
    return get_workload(name, seed=seed, **{**SMALL[name], **extra})


def stream(w: Workload) -> list[tuple[float, str, str, bytes, bytes, int]]:
    """Everything observable about a workload's events, in order."""
    return [
        (
            e.time,
            e.kind,
            e.request.rid,
            e.request.prompt.tobytes(),
            e.request.output.tobytes(),
            e.request.priority,
        )
        for e in w.events()
    ]


def arrivals(w: Workload) -> list[Any]:
    return [e.request for e in w.events() if e.kind == "arrive"]


def test_registry_lists_the_five_workloads_default_first() -> None:
    assert workload_names() == [
        "chat",
        "hot-set-with-scans",
        "popularity-shift",
        "priority-tiers",
        "agentic",
    ]
    assert set(SMALL) == set(WORKLOADS)


@pytest.mark.parametrize("name", list(SMALL))
def test_same_seed_same_events_other_seed_other_events(name: str) -> None:
    a, b, c = small(name, 3), small(name, 3), small(name, 4)
    assert stream(a) == stream(b)
    assert stream(a) != stream(c)
    # events() is a fresh iterator each call: replaying twice sees the same stream
    assert stream(a) == stream(a)


@pytest.mark.parametrize("name", list(SMALL))
def test_event_invariants(name: str) -> None:
    w = small(name, 1)
    t_prev = -1.0
    arrived: dict[str, float] = {}
    finished = set()
    for e in w.events():
        assert e.time >= t_prev
        t_prev = e.time
        r = e.request
        assert r.prompt.dtype == np.int64 and r.output.dtype == np.int64
        if e.kind == "arrive":
            assert r.rid not in arrived
            arrived[r.rid] = e.time
            assert r.arrival == e.time
        else:
            assert r.rid in arrived and r.rid not in finished
            finished.add(r.rid)
            expect = arrived[r.rid] + service_time(len(r.prompt), len(r.output), w.params)
            assert e.time == pytest.approx(expect)
    assert len(arrived) == len(finished) == w.num_requests


@pytest.mark.parametrize("name", list(SMALL))
def test_turns_grow_the_conversation(name: str) -> None:
    """Turn k's prompt = turn k-1's prompt + its output + new tokens."""
    last: dict[int, Any] = {}
    follow_ups = 0
    for r in arrivals(small(name, 2)):
        prev = last.get(r.session)
        if prev is not None:
            head = np.concatenate([prev.prompt, prev.output])
            assert np.array_equal(r.prompt[: len(head)], head)
            assert len(r.prompt) > len(head)
            follow_ups += 1
        last[r.session] = r
    if name in ("chat", "agentic"):
        assert follow_ups > 0


@pytest.mark.parametrize("name", list(SMALL))
def test_describe_is_json_and_reports_the_default_pool(name: str) -> None:
    w = small(name)
    d = json.loads(json.dumps(w.describe(), allow_nan=False))
    assert d["name"] == name and d["requests"] == w.num_requests
    assert d["default_pool_tokens"] == w.default_pool_tokens > 0
    assert d["prompt_tokens"] == sum(len(r.prompt) for r in arrivals(w))
    assert "suggested_tlru" not in d, "a workload names no policy"
    full = describe_workload(w)
    assert full["suggested_tlru"]["config"] == derive_tlru(w.stats()).config
    assert list(full).index("suggested_tlru") == list(full).index("default_pool_tokens") + 1


@pytest.mark.parametrize("name", list(SMALL))
def test_every_parameter_is_documented(name: str) -> None:
    docs = param_docs(WORKLOADS[name].params_type)
    assert docs and all(p["doc"] for p in docs)
    assert {p["name"] for p in docs} >= set(SMALL[name])


# ---------------------------------------------------------------- derived tlru config
@given(st.integers(min_value=0, max_value=10**7))
def test_threshold_rule_is_above_the_estimate(estimate: int) -> None:
    t = threshold_rule(estimate)
    assert t > estimate and t >= 2 * estimate and t % 64 == 0
    assert t - 2 * estimate < 64 or estimate == 0


@pytest.mark.parametrize("name", list(SMALL))
def test_derived_tlru_estimate_is_the_mean_next_turn_growth(name: str) -> None:
    w = small(name, 5)
    growth_follow, growth_first = [], []
    last: dict[int, Any] = {}
    for r in arrivals(w):
        prev = last.get(r.session)
        if prev is None:
            sess = w.sessions[r.session]
            growth_first.append(len(r.prompt) - len(sess.prefix))
        else:
            growth_follow.append(len(r.prompt) - len(prev.prompt) - len(prev.output))
        last[r.session] = r
    samples = growth_follow or growth_first
    s = derive_tlru(w.stats())
    estimate, threshold = s.config["next_prompt_estimate"], s.config["threshold"]
    assert estimate == round(float(np.mean(samples)))
    assert threshold > estimate
    assert threshold == threshold_rule(estimate)
    assert str(estimate) in s.derivation and str(threshold) in s.derivation


def test_agentic_estimate_follows_next_turn_tokens() -> None:
    lo = derive_tlru(small("agentic", 0, next_turn_tokens=100.0).stats())
    hi = derive_tlru(small("agentic", 0, next_turn_tokens=1600.0).stats())
    assert hi.config["next_prompt_estimate"] > 4 * lo.config["next_prompt_estimate"]


# ---------------------------------------------------------------- get_workload errors
def test_unknown_workload_names_the_choices() -> None:
    with pytest.raises(WorkloadError, match="hot-set-with-scans") as e:
        get_workload("hot-set")
    assert "did you mean" in str(e.value)


def test_unknown_parameter_names_a_near_miss() -> None:
    with pytest.raises(WorkloadError, match="did you mean 'convs'"):
        get_workload("chat", conv=3)


@pytest.mark.parametrize(
    "params",
    [
        {"convs": 0},
        {"convs": -1},
        {"convs": 2.5},
        {"convs": True},
        {"zipf": float("nan")},
        {"sys_min": 900, "sys_max": 100},
        {"tool_loop_prob": 1.5},
        {"vocab": 50},
        {"convs": "many"},
    ],
)
def test_bad_parameter_values_are_errors_naming_the_field(params: dict[str, Any]) -> None:
    with pytest.raises(WorkloadError) as e:
        get_workload("chat", **params)
    assert any(k in str(e.value) for k in params)


def test_string_parameters_are_converted() -> None:
    w = get_workload("chat", seed=0, convs="7", zipf="0.5")
    assert len(w.sessions) == 7
    assert w.params.to_dict()["zipf"] == 0.5


@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_bad_seed(seed: Any) -> None:
    with pytest.raises(WorkloadError, match="seed"):
        get_workload("chat", seed=seed)


# ---------------------------------------------------------------- chat
def test_chat_parameters() -> None:
    w = get_workload("chat", seed=0, convs=60, max_turns=3, num_sys=4, priorities=2)
    assert len(w.sessions) == 60
    user_turns = [[t for t in s.turns if t.kind == "user"] for s in w.sessions]
    assert all(1 <= len(u) <= 3 for u in user_turns)
    assert len({s.prefix.tobytes() for s in w.sessions}) <= 4
    assert {s.priority for s in w.sessions} == {0, 1}
    for s in w.sessions:
        assert 300 <= len(s.prefix) <= 2000
        for t in s.turns:
            if t.kind == "user":
                assert tuple(t.user[:3]) == USER_HDR


def test_chat_system_prompts_follow_zipf() -> None:
    w = get_workload("chat", seed=0, convs=600, tool_loop_prob=0.0)
    counts: dict[bytes, int] = defaultdict(int)
    for s in w.sessions:
        counts[s.prefix.tobytes()] += 1
    top = sorted(counts.values(), reverse=True)
    assert top[0] > 3 * top[-1]  # popularity is skewed...
    flat = get_workload("chat", seed=0, convs=600, zipf=0.0, tool_loop_prob=0.0)
    flat_counts: dict[bytes, int] = defaultdict(int)
    for s in flat.sessions:
        flat_counts[s.prefix.tobytes()] += 1
    assert max(flat_counts.values()) < top[0]  # ...and zipf=0 flattens it


def test_chat_tool_loops_leave_the_conversations_unchanged() -> None:
    plain = get_workload("chat", seed=9, convs=80, tool_loop_prob=0.0)
    looped = get_workload(
        "chat",
        seed=9,
        convs=80,
        tool_loop_prob=1.0,
        tool_calls_min=2,
        tool_calls_max=4,
        tool_think_mean=1.0,
    )
    assert not any(t.kind == "tool" for s in plain.sessions for t in s.turns)
    for a, b in zip(plain.sessions, looped.sessions, strict=True):
        assert a.start == b.start and a.priority == b.priority
        assert np.array_equal(a.prefix, b.prefix)
        users = [t for t in b.turns if t.kind == "user"]
        assert [t.user.tobytes() for t in a.turns] == [t.user.tobytes() for t in users]
        tools = sum(t.kind == "tool" for t in b.turns)
        assert 2 <= tools <= 4
    assert looped.describe()["tool_loops"] == 80
    # the pause before each tool result is a tool's run time (seconds), not a human's
    gaps = [
        s.turns[i].think
        for s in looped.sessions
        for i in range(len(s.turns) - 1)
        if s.turns[i + 1].kind == "tool"
    ]
    assert np.mean(gaps) < 3 < 15 < np.mean([t.think for s in plain.sessions for t in s.turns])




@pytest.mark.parametrize("seed", [0, 7])
def test_chat_without_tool_loops_is_the_harness_synthetic_workload(seed: int) -> None:
    bench = load_harness()
    theirs = bench.Workload(harness_args(seed=seed, convs=120))
    ours = get_workload("chat", seed=seed, convs=120, tool_loop_prob=0.0)
    assert ours.num_requests == theirs.num_requests
    pairs = zip(ours.events(), theirs.events(), strict=True)
    for e, (kind, req) in pairs:
        assert e.kind == kind
        assert np.array_equal(e.request.prompt, req["prompt"])
        assert np.array_equal(e.request.output, req["out"])
        assert e.request.priority == req["prio"]


# ---------------------------------------------------------------- hot-set-with-scans
def test_hot_set_parameters() -> None:
    w = get_workload(
        "hot-set-with-scans",
        seed=1,
        hot_requests=500,
        hot_docs=7,
        scan_every=100,
        scan_burst=3,
        scan_min=2000,
        scan_max=2500,
    )
    reqs = arrivals(w)
    hot = [r for r in reqs if r.kind == "hot"]
    scans = [r for r in reqs if r.kind == "scan"]
    assert len(hot) == 500
    assert len(scans) == 4 * 3  # a burst after every 100 hot requests but the first
    assert all(2000 <= len(r.prompt) <= 2500 for r in scans)
    assert len({r.prompt.tobytes() for r in scans}) == len(scans)  # one-off
    docs = {w.sessions[r.session].prefix.tobytes() for r in hot}
    assert len(docs) == 7
    hot_tokens = sum(len(d) // 8 for d in docs)  # bytes -> int64 tokens
    assert w.describe()["hot_set_tokens"] == hot_tokens
    assert w.default_pool_tokens == round_pool(1.5 * hot_tokens)
    none = get_workload("hot-set-with-scans", seed=1, hot_requests=500, scan_burst=0)
    assert all(r.kind == "hot" for r in arrivals(none))


# ---------------------------------------------------------------- popularity-shift
@pytest.mark.parametrize("fraction, shared", [(1.0, 0), (0.5, 5), (0.0, 10)])
def test_popularity_shift_replaces_the_hot_set(fraction: float, shared: int) -> None:
    w = get_workload(
        "popularity-shift",
        seed=2,
        requests=2000,
        hot_docs=10,
        shift_at=0.25,
        shift_fraction=fraction,
    )
    reqs = arrivals(w)
    before = [r for r in reqs if r.kind == "before"]
    assert len(before) == 500 and [r.kind for r in reqs[:500]] == ["before"] * 500
    docs = {
        k: {w.sessions[r.session].prefix.tobytes() for r in reqs if r.kind == k}
        for k in ("before", "after")
    }
    assert len(docs["before"]) == len(docs["after"]) == 10
    assert len(docs["before"] & docs["after"]) == shared


# ---------------------------------------------------------------- priority-tiers
def test_priority_tiers_tenants_and_priorities() -> None:
    w = get_workload("priority-tiers", seed=3, requests=900, tenants=4, docs_per_tenant=5)
    reqs = arrivals(w)
    assert {r.priority for r in reqs} == {0, 1, 2, 3}
    docs: dict[int, set[bytes]] = defaultdict(set)
    for r in reqs:
        assert r.kind == f"tenant{r.priority}"
        docs[r.priority].add(w.sessions[r.session].prefix.tobytes())
    assert all(len(d) == 5 for d in docs.values())
    assert not set.intersection(*docs.values())  # tenants share no document
    counts = [sum(r.priority == p for r in reqs) for p in range(4)]
    assert min(counts) > 150  # equal shares, about 225 each


# ---------------------------------------------------------------- agentic
def test_agentic_structure() -> None:
    w = get_workload(
        "agentic",
        seed=4,
        sessions=10,
        episodes_min=2,
        episodes_max=2,
        tool_calls_min=3,
        tool_calls_max=3,
        tool_gap_mean=2.0,
        think_mean=120.0,
    )
    for s in w.sessions:
        kinds = [t.kind for t in s.turns]
        assert kinds == ["user", "tool", "tool", "tool"] * 2
    tool_gaps = [
        s.turns[i].think
        for s in w.sessions
        for i in range(len(s.turns) - 1)
        if s.turns[i + 1].kind == "tool"
    ]
    human = [s.turns[3].think for s in w.sessions]
    assert np.mean(tool_gaps) < 6 < 40 < np.mean(human)
    assert len(tool_gaps) == 10 * 2 * 3
    # histories grow long: the last prompt of a session holds everything before it
    last = {}
    for r in arrivals(w):
        last[r.session] = len(r.prompt)
    assert min(last.values()) > 2000


def test_near_misses_come_from_the_one_did_you_mean() -> None:
    """radix_evict.suggest matches case-insensitively, as every other message does."""
    with pytest.raises(WorkloadError, match="did you mean 'chat'"):
        get_workload("CHAT")
    with pytest.raises(WorkloadError, match="did you mean 'convs'"):
        get_workload("chat", CONVS=3)
