"""``learned`` reads client hints as features, and only when a request sent one.

Without hints its features (and so every decision) are what they were before
hints existed; with them, a session-end hint and a return time each add one
feature, and the model learns from them.
"""

from __future__ import annotations

from dataclasses import replace

from radix_evict_learned import FEATURES
from radix_evict_learned.model import OFFSETS
from radix_evict_learned.policy import _hints

from radix_evict import RequestContext
from radix_evict.sim.hints import with_hints
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

BASE = RequestContext(session=1, turn=2, kind="text", output_len=40)


def test_no_hint_adds_no_feature() -> None:
    assert _hints(BASE) == ()


def test_each_hint_adds_its_bucket() -> None:
    ended = _hints(replace(BASE, session_end=True))
    going = _hints(replace(BASE, session_end=False))
    assert ended == (OFFSETS["session_end"] + 1,) and going == (OFFSETS["session_end"],)
    back = _hints(replace(BASE, next_request_s=10.0))
    kept = _hints(replace(BASE, retention_s=1000.0))
    lo, n = OFFSETS["return_s"], dict(FEATURES)["return_s"]
    assert len(back) == len(kept) == 1 and lo <= back[0] < kept[0] < lo + n


def test_hints_change_what_it_learns() -> None:
    w = get_workload("chat", seed=0, convs=60)
    rates = []
    for workload in (w, with_hints(w, "session-end")):
        r = replay(workload, "learned", {"warmup": 20}, pool_tokens=20_000, page_size=1,
                   timeline_points=0)
        rates.append(r.hit_rate)
    assert rates[0] != rates[1]
