"""The replays hand each request's context to the cache, only for a policy that reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from radix_evict import EvictionPolicy, RequestContext, TreeNode
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.traces.formats import open_trace
from radix_evict.sim.workloads import get_workload, load_trace

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"


class SeesContext(EvictionPolicy):
    """LRU that records the contexts of the leaves it is told about."""

    name = "sees-context"
    uses_context = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def score(self, node: TreeNode) -> float:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        self.seen.append(node.context)


@pytest.mark.parametrize("timed", [False, True])
def test_a_session_workload_gives_sessions_turns_and_kinds(timed: bool) -> None:
    w = get_workload("agentic", seed=0, sessions=6)
    policy = SeesContext()
    replay(w, policy, pool_tokens=50_000, timing=TimingSpec() if timed else None)
    ctxs = [c for c in policy.seen if c is not None]
    assert ctxs and len(ctxs) == len(policy.seen)
    assert all(isinstance(c, RequestContext) for c in ctxs)
    assert {c.kind for c in ctxs} >= {"user", "tool"}
    later = [c for c in ctxs if c.turn]
    assert later and all(c.parent == f"s{c.session}t{c.turn - 1}" for c in later)
    assert all(c.output_len is not None and c.output_len >= 0 for c in ctxs)


def test_a_policy_that_ignores_context_costs_no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    w = get_workload("chat", seed=0, convs=10)

    def boom(req: Any) -> RequestContext:
        raise AssertionError("context built for a policy that does not read it")

    monkeypatch.setattr(w, "context_of", boom)
    replay(w, "lru", pool_tokens=20_000)
    replay(w, "lru", pool_tokens=20_000, timing=TimingSpec())


@pytest.mark.skipif(not (TRACES / "mooncake_conversation_trace.jsonl").exists(),
                    reason="needs the shared traces")
def test_a_mooncake_trace_gives_only_what_it_records() -> None:
    w = load_trace(TRACES / "mooncake_conversation_trace.jsonl", limit=50)
    policy = SeesContext()
    replay(w, policy, page_size=512)
    c = policy.seen[0]
    assert c.session is None and c.turn is None and c.kind is None
    assert c.arrival is not None and c.output_len is not None and c.rid.startswith("r")


def test_a_bailian_trace_gives_chat_links_and_types(tmp_path: Path) -> None:
    rows = [
        {"chat_id": 10, "parent_chat_id": -1, "turn": 1, "timestamp": 0.0, "input_length": 32,
         "output_length": 16, "hash_ids": [1, 2], "type": "text"},
        {"chat_id": 11, "parent_chat_id": 10, "turn": 2, "timestamp": 1.0, "input_length": 64,
         "output_length": 16, "hash_ids": [1, 2, 3, 4], "type": "image"},
    ]
    path = tmp_path / "bailian.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    w = open_trace(path)
    policy = SeesContext()
    replay(w, policy, page_size=16)
    first, second = policy.seen[0], policy.seen[-1]
    assert (first.session, first.turn, first.kind, first.parent) == (0, 0, "text", None)
    assert (second.session, second.turn, second.kind, second.parent) == (0, 1, "image", 0)
