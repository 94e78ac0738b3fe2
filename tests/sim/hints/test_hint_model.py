"""Hint models: true values from the trace, coverage by session, error by request, seeded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radix_evict.sim.hints import HintUnavailable, hints_of, with_hints
from radix_evict.sim.hints.truth import next_requests, session_ends
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload
from radix_evict.sim.workloads.base import SessionWorkload
from radix_evict.sim.workloads.trace import load_trace


def _trace(tmp_path: Path, rows: list[list[int]]) -> Path:
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps({"timestamp": i, "input_length": 4 * len(h) - 1,
                                     "output_length": 2, "hash_ids": h}) + "\n"
                         for i, h in enumerate(rows)))
    return p


def test_mooncake_chains_find_last_turns(tmp_path: Path) -> None:
    # Two conversations on a shared system block 0: A = r0 -> r2 -> r4, B = r1 -> r3.
    rows = [[0, 1, 2], [0, 5, 6], [0, 1, 2, 3, 4], [0, 5, 6, 7], [0, 1, 2, 3, 4, 8]]
    truth = session_ends(load_trace(_trace(tmp_path, rows), block_size=4))
    assert {r: end for r, (_, end) in truth.items()} == {
        "r0": False, "r1": False, "r2": False, "r3": True, "r4": True}
    sessions = {r: s for r, (s, _) in truth.items()}
    assert sessions["r2"] == sessions["r4"] == sessions["r0"] != sessions["r3"]
    assert sessions["r3"] == sessions["r1"]


def test_session_workload_last_turns_and_tool_gaps() -> None:
    w = get_workload("agentic", seed=1)
    ends = session_ends(w)
    s0 = w.sessions[0]
    assert ends[f"s0t{len(s0.turns) - 1}"] == (0, True)
    assert ends["s0t0"] == (0, False)
    gaps = next_requests(w)
    for ti in range(len(s0.turns) - 1):
        rid = f"s0t{ti}"
        assert (rid in gaps) == (s0.turns[ti + 1].kind == "tool")
        if rid in gaps:
            assert gaps[rid] == (0, s0.turns[ti].think)


def test_coverage_error_and_seed() -> None:
    w = get_workload("agentic", seed=1)
    truth = session_ends(w)
    full = hints_of(with_hints(w, "session-end"))
    assert all(full[r]["session_end"] == v for r, (_, v) in truth.items())
    half = hints_of(with_hints(w, "session-end:coverage=0.5"))
    covered = {truth[r][0] for r in half}
    assert 0.3 < len(covered) / len(w.sessions) < 0.7
    assert all(all(f"s{s}t{t}" in half for t in range(len(w.sessions[s].turns)))
               for s in covered)  # a covered session sends on every request
    wrong = hints_of(with_hints(w, "session-end:error=0.2"))
    flipped = sum(wrong[r]["session_end"] != v for r, (_, v) in truth.items())
    assert 0.12 < flipped / len(truth) < 0.28
    again = hints_of(with_hints(w, "session-end:error=0.2"))
    other = hints_of(with_hints(w, "session-end:error=0.2,seed=7"))
    assert again == wrong != other


def test_context_carries_the_hint_and_nothing_else_changes() -> None:
    w = get_workload("agentic", seed=1)
    hinted = with_hints(w, "next-request")
    assert isinstance(hinted, SessionWorkload)  # a copy of its type: timed arrivals unchanged
    assert w.context_of(next(w.requests())).next_request_s is None  # the original untouched
    req = next(r for r in hinted.requests() if r.rid in hints_of(hinted))
    ctx = hinted.context_of(req)
    assert ctx.next_request_s == next_requests(w)[req.rid][1]
    assert ctx.session_end is None
    assert ctx.session == w.context_of(req).session
    assert hinted.describe()["hints"]["specs"] == ["next-request:coverage=1,error=0,seed=0"]
    # a policy that ignores hints decides exactly as before
    a = replay(w, "lru", pool_tokens=20000, timeline_points=0)
    b = replay(hinted, "lru", pool_tokens=20000, timeline_points=0)
    assert (a.hit_rate, a.evicted_tokens) == (b.hit_rate, b.evicted_tokens)


def test_unavailable_hint_is_named(tmp_path: Path) -> None:
    trace = load_trace(_trace(tmp_path, [[0, 1]]), block_size=4)
    with pytest.raises(HintUnavailable, match="next-request hints need a session workload"):
        with_hints(trace, "next-request")


def test_a_trace_without_sessions_gets_the_derived_one(tmp_path: Path) -> None:
    rows = [[0, 1, 2], [0, 5, 6], [0, 1, 2, 3, 4]]
    trace = load_trace(_trace(tmp_path, rows), block_size=4)
    hinted = with_hints(trace, "session-end")
    ctx = {r.rid: hinted.context_of(r) for r in hinted.requests()}
    assert trace.context_of(next(trace.requests())).session is None
    assert ctx["r0"].session == ctx["r2"].session != ctx["r1"].session
    assert [ctx[r].session_end for r in ("r0", "r1", "r2")] == [False, True, True]
