"""SGLang fills the RequestContext a policy with ``uses_context`` reads, from its own Req.

Requests run through SGLang 0.5.23's own scheduler steps on its own trees
(``helpers.sglang_rig.Server``: ``Req.init_next_round_input`` -> ``match_kv_cache``, a
``ReqToTokenPool`` row, ``checkpoint_kv_cache`` while running, ``checkpoint`` once
finished), with SGLang's ``Req`` and ``Session``; the policy notes the context on every
node it hears of or scores. A policy without ``uses_context`` gets nothing built.
"""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from helpers.sglang_rig import Server, sglang_plugin, sglang_policy, sglang_req

from radix_evict import EvictionPolicy, RequestContext, TreeNode
from radix_evict.sglang import context
from radix_evict.sglang.adapter import node_view

__all__ = ["sglang_plugin"]

pytestmark = pytest.mark.usefixtures("sglang_plugin")

TREES = ("legacy", "unified-py", "unified-rust")  # rust selected: runs on the Python core


class Seen(EvictionPolicy):
    """LRU that writes down the context of every node it hears of or scores."""

    name = "ctx-seen"
    uses_context = True

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, Any]] = []
        self.scored: list[Any] = []

    def score(self, node: TreeNode) -> float:
        self.scored.append(node.context)
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        self.log.append(("insert", node.context))

    def on_hit(self, node: TreeNode) -> None:
        self.log.append(("hit", node.context))

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        self.log.append(("split", (head.context, tail.context)))


class Blind(Seen):
    """The same callbacks, without ``uses_context``."""

    name = "ctx-blind"
    uses_context = False


def _nodes(server: Server) -> list[Any]:
    """Every SGLang node of the server's tree but the root."""
    cache = server.cache
    root = cache.root_node if hasattr(cache, "root_node") else cache.tree_core.root_node
    out, stack = [], [root]
    while stack:
        x = stack.pop()
        for c in x.children.values():
            out.append(c)
            stack.append(c)
    return out


def _node_ending(server: Server, tokens: list[int]) -> Any:
    for x in _nodes(server):
        n, y = 0, x
        while y.key is not None and y.parent is not None:
            n += len(y.key)
            y = y.parent
        if n == len(tokens):
            got: list[int] = []
            y = x
            while y.parent is not None and y.key is not None:
                got[:0] = list(y.key.token_ids[: len(y.key)])
                y = y.parent
            if got == tokens:
                return x
    raise AssertionError(f"no node ends {tokens[:4]}...")


@pytest.mark.parametrize("tree", TREES)
def test_sglangs_requests_reach_the_policy_as_request_contexts(
    tree: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = Seen()
    server = Server(tree, sglang_policy(policy, monkeypatch))
    prompt_a = list(range(100, 120))
    a = sglang_req("a", prompt_a, priority=3, session_id="chat-1")
    assert server.serve(a, [7, 8, 9]) == 0
    running = RequestContext(session="chat-1", kind="text", priority=3,
                             arrival=a.time_stats.scheduler_recv_time, rid="a")
    assert running.arrival is not None and running.arrival > 0
    done = RequestContext(session="chat-1", kind="text", priority=3, arrival=running.arrival,
                          output_len=3, rid="a")
    # The prompt's checkpoint while running (no output length yet), then the finished
    # request's output leaf; its prompt split reuses the boundary (no new leaf).
    assert policy.log == [("insert", running), ("insert", done)]
    assert node_view(_node_ending(server, prompt_a)).context == done  # walked by the last insert

    prompt_b = [*prompt_a[:10], 5, 6]
    b = sglang_req("b", prompt_b)
    policy.log.clear()
    assert server.serve(b, [4]) == 10
    seen_b = RequestContext(kind="text", arrival=b.time_stats.scheduler_recv_time, rid="b")
    b_done = RequestContext(kind="text", arrival=seen_b.arrival, output_len=1, rid="b")
    assert policy.log == [
        ("split", (done, done)),  # b's lookup splits a's prompt: the head keeps a's context
        ("hit", seen_b),  # then the shared head is b's, before the policy hears of the hit
        ("insert", seen_b),
        ("insert", b_done),
    ]
    assert node_view(_node_ending(server, prompt_a[:10])).context == b_done
    assert node_view(_node_ending(server, prompt_a)).context == done  # not b's: untouched
    assert node_view(_node_ending(server, [*prompt_a, 7, 8, 9])).context == done

    policy.scored.clear()
    from sglang.srt.mem_cache.base_prefix_cache import EvictParams

    server.cache.evict(EvictParams(num_tokens=server.pool_tokens))
    assert server.cache.evictable_size() == 0
    assert {c.rid for c in policy.scored} == {"a", "b"} and None not in policy.scored


def _session_recv(rid: str, ids: list[int], session: str, prev: str | None) -> Any:
    from sglang.srt.managers.io_struct import SessionParams, TokenizedGenerateReqInput
    from sglang.srt.sampling.sampling_params import SamplingParams

    return TokenizedGenerateReqInput(
        rid=rid, input_text=None, input_ids=array("q", ids), input_embeds=None,
        mm_inputs=None, token_type_ids=None, sampling_params=SamplingParams(max_new_tokens=8),
        return_logprob=False, logprob_start_len=-1, top_logprobs_num=0,
        token_ids_logprob=None, stream=False,
        session_params=SessionParams(id=session, rid=prev), priority=1,
    )  # fmt: skip


@pytest.mark.parametrize("tree", ["legacy", "unified-py"])
def test_a_sessions_turns_know_their_session_parent_and_turn(
    tree: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang's Session builds each turn's Req (history + new message) and keeps them as a
    tree of requests: the context names the session, the turn it continues and its depth."""
    from sglang.srt.session.session_controller import Session

    policy = Seen()
    server = Server(tree, sglang_policy(policy, monkeypatch))
    session = Session(capacity_of_str_len=1 << 20, session_id="chat-7")
    prev = None
    for turn, (rid, message) in enumerate([("t0", [1, 2, 3, 4]), ("t1", [5, 6]), ("t2", [7])]):
        req = session.create_req(_session_recv(rid, message, "chat-7", prev), None, 1000)
        assert not req.finished()  # (an abort would say why)
        policy.log.clear()
        hit = server.serve(req, [40 + turn, 50 + turn])
        want = RequestContext(session="chat-7", parent=prev, turn=turn, kind="text",
                              priority=1, arrival=req.time_stats.scheduler_recv_time,
                              output_len=2, rid=rid)
        assert policy.log[-1] == ("insert", want)
        if turn:
            assert hit > 0  # the history is cached: the turn hits it, as itself
            hits = [c for e, c in policy.log if e == "hit"]
            assert hits and all(c.rid == rid and c.parent == prev and c.turn == turn
                                for c in hits)
        prev = rid


def test_a_streaming_session_knows_the_previous_request_but_not_the_depth() -> None:
    from sglang.srt.managers.schedule_batch import FINISH_LENGTH
    from sglang.srt.session.session_controller import Session

    session = Session(capacity_of_str_len=1 << 20, session_id="live", streaming=True)
    first = session.create_req(_session_recv("s0", [1, 2, 3], "live", None), None, 1000)
    assert context.of_req(first) == RequestContext(
        session="live", kind="text", priority=1,
        arrival=first.time_stats.scheduler_recv_time, rid="s0")  # fmt: skip
    first.output_ids.extend([9])
    first.finished_reason = FINISH_LENGTH(length=1)
    session.finish_req(first)
    second = session.create_req(_session_recv("s1", [4], "live", None), None, 1000)
    ctx = context.of_req(second)
    assert ctx is not None and (ctx.session, ctx.parent, ctx.turn) == ("live", "s0", None)
    assert context.at_checkpoint(first) == RequestContext(
        session="live", kind="text", priority=1,
        arrival=first.time_stats.scheduler_recv_time, output_len=1, rid="s0")  # fmt: skip


def test_the_kind_is_the_media_in_the_prompt() -> None:
    from sglang.srt.managers.schedule_batch import MultimodalDataItem, MultimodalInputs
    from sglang.srt.multimodal.modality import Modality

    def kind(*modalities: Any, embeds: bool = False) -> str | None:
        req = sglang_req("k", [1, 2, 3])
        if modalities:
            req.multimodal_inputs = MultimodalInputs(
                mm_items=[MultimodalDataItem(modality=m) for m in modalities])
        if embeds:
            req.input_embeds = [[0.0]]
        return context.build(req).kind

    assert kind() == "text"
    assert kind(Modality.IMAGE) == "image" and kind(Modality.IMAGE, Modality.IMAGE) == "image"
    assert kind(Modality.VIDEO) == "video" and kind(Modality.AUDIO) == "audio"
    assert kind(Modality.IMAGE, Modality.AUDIO) == "multimodal"
    assert kind(embeds=True) == "embeds"


def test_the_context_is_built_once_per_request_and_kept_on_it() -> None:
    req = sglang_req("once", [1, 2, 3], priority=2)
    first = context.of_req(req)
    req.priority = 9  # later changes do not rebuild it
    assert context.of_req(req) is first and getattr(req, context.REQ_CONTEXT) is first
    assert first is not None and first.priority == 2 and first.output_len is None
    assert context.at_checkpoint(req) is first  # not finished: nothing to add


@pytest.mark.parametrize("tree", ["legacy", "unified-py"])
def test_a_policy_without_uses_context_gets_none_and_nothing_is_built(
    tree: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any) -> Any:
        raise AssertionError("a context was built for a policy that reads none")

    for name in ("of_req", "at_checkpoint", "build"):
        monkeypatch.setattr(context, name, never)
    policy = Blind()
    server = Server(tree, sglang_policy(policy, monkeypatch))
    strategy = (server.cache if tree == "legacy" else server.cache.tree_core).eviction_strategy
    assert strategy.uses_context is False
    a = sglang_req("a", list(range(100, 120)), priority=3, session_id="chat-1")
    server.serve(a, [7, 8, 9])
    b = sglang_req("b", [*range(100, 110), 5, 6])
    assert server.serve(b, [4]) == 10
    kinds = [e for e, _ in policy.log]
    assert {"insert", "hit", "split"} <= set(kinds)
    assert all(c is None or c == (None, None) for _, c in policy.log)
    for req in (a, b):
        assert not hasattr(req, context.REQ_CONTEXT)
    nodes = _nodes(server)
    assert nodes and not any(hasattr(x, context.NODE_CONTEXT) for x in nodes)
    tree_obj = server.cache if tree == "legacy" else server.cache.tree_core
    assert getattr(tree_obj, context.TREE_REQUEST, None) is None
