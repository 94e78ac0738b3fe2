"""The lru pool curve in one pass equals one replay per size (issue #41).

Exactness is the claim, so every test compares with ``replay(workload, "lru",
pool_tokens=S, page_size=P)`` figure by figure; a size the pass marks
inexact must come back replayed, and sizes it does not mark must come from
the pass (else a pass that marks everything would pass too).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from radix_evict.sim.curve import CURVE, REPLAY, CurvePoint, pool_curve, round_sizes
from radix_evict.sim.curve.fenwick import Fenwick
from radix_evict.sim.curve.stack import stack_pass
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import Workload, get_workload, load_trace

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"


def _same(w: Workload, pt: CurvePoint, page: int) -> None:
    r = replay(w, "lru", pool_tokens=pt.pool_tokens, page_size=page, timeline_points=0,
               workload_info={})
    assert (pt.hit_tokens, pt.prompt_tokens, pt.requests, pt.failed, pt.evicted_tokens,
            pt.evict_calls) == (r.hit_tokens, r.prompt_tokens, r.requests, r.failed,
                                r.evicted_tokens, r.evict_calls), pt
    assert (pt.hit_rate, pt.p50_uncached, pt.p90_uncached, pt.p99_uncached,
            pt.mean_uncached) == (r.hit_rate, r.p50_uncached, r.p90_uncached,
                                  r.p99_uncached, r.mean_uncached)


def test_fenwick_matches_brute_force() -> None:
    rng = random.Random(7)
    fen = Fenwick(capacity=4)  # small: it has to grow
    w = [0] * 300
    for _ in range(2000):
        i = rng.randrange(300)
        d = rng.randrange(1, 50) if w[i] == 0 or rng.random() < 0.5 else -w[i]
        w[i] += d
        fen.add(i, d)
        e = rng.randrange(301)
        assert fen.prefix(e) == sum(w[:e])
        t = rng.randrange(1, sum(w) + 2)
        b = fen.lower_bound(t)
        want = next((k for k in range(301) if sum(w[:k]) >= t), None)
        if want is None:  # short of the target: past every position that holds weight
            assert b > max((k for k in range(300) if w[k]), default=-1)
        else:
            assert b == want
    assert fen.total == sum(w)


@pytest.mark.parametrize("name", ["chat", "agentic"])
def test_built_in_workloads_equal_per_size_replays(name: str) -> None:
    w = get_workload(name, convs=120) if name == "chat" else get_workload(name)
    d = w.default_pool_tokens
    sizes = [d // 8, d // 2, d, 2 * d]
    curve = pool_curve(w, sizes, 1)
    for pt in curve.points:
        _same(w, pt, 1)
    assert [p.source for p in curve.points if p.pool_tokens >= d] == [CURVE, CURVE]


def test_mooncake_trace_prefix_equals_per_size_replays() -> None:
    w = load_trace(TRACES / "mooncake_conversation_trace.jsonl", limit=1500)
    curve = pool_curve(w, [250_000, 1_000_000, 2_000_000, 4_000_000], 512)
    for pt in curve.points:
        _same(w, pt, 512)
    assert [p.source for p in curve.points][1:] == [CURVE] * 3
    small = curve.points[0]  # 250K: requests find no room, so the pass stands aside
    assert small.source == REPLAY and small.failed > 0
    assert small.inexact is not None and "failed admission" in small.inexact


def test_synthetic_trace_equals_per_size_replays() -> None:
    w = load_trace(TRACES / "mooncake_synthetic_trace.jsonl", limit=1000)
    curve = pool_curve(w, [1_000_000, 3_000_000], 512)
    for pt in curve.points:
        _same(w, pt, 512)


def test_marked_sizes_are_what_differs() -> None:
    """Without the fallback a marked size keeps the pass's figures: the marks are needed
    (some marked size differs from its replay) and unmarked sizes are exact."""
    w = get_workload("chat", convs=120)
    d = w.default_pool_tokens
    sizes = round_sizes([d // 20, d // 8, d], 1)
    sp = stack_pass(w, sizes, 1)
    differs = []
    for c, size in enumerate(sizes):
        r = replay(w, "lru", pool_tokens=size, timeline_points=0, workload_info={})
        same = r.hit_tokens == int(sp.hits[:, c].sum()) and r.evicted_tokens == sp.evicted[c]
        assert same or sp.inexact[c] is not None, size
        differs.append(not same)
    assert any(differs)


def test_page_rounding_and_bad_sizes() -> None:
    assert round_sizes([2048, 1000, 1023, 1100], 512) == [512, 1024, 2048]
    with pytest.raises(ValueError, match="no whole page"):
        round_sizes([100], 512)
    with pytest.raises(ValueError, match="at least one"):
        round_sizes([], 1)
    with pytest.raises((TypeError, ValueError), match="pool size"):
        round_sizes([True], 1)
    w = get_workload("chat", convs=20)
    curve = pool_curve(w, [5000, 5001], 16)
    assert [p.pool_tokens for p in curve.points] == [4992]
    assert curve.point(5001).pool_tokens == 4992
    with pytest.raises(KeyError, match="not on this curve"):
        curve.point(10_000)
