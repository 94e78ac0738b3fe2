"""vLLM's offload tier fills the RequestContext a policy with ``uses_context`` reads.

Requests run through vLLM 0.33.0's real ``CPUOffloadingManager`` (``replay``: lookups,
loads, stores, finishes, each with the request's ``ReqContext``); the policy notes the
context of every chunk it hears of or scores. vLLM hands the tier the request's id and its
``kv_transfer_params``, where a client may put ``radix_evict_context``. A policy without
``uses_context`` gets nothing built.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from radix_evict import EvictionPolicy, PolicySpec, RequestContext, TreeNode, hookimpl, registry
from radix_evict.vllm import cache_policy
from radix_evict.vllm import context as vllm_context
from radix_evict.vllm.launch import build_manager
from radix_evict.vllm.replay import chunk_key, replay


class Seen(EvictionPolicy):
    """LRU that writes down the context of every chunk it hears of or scores."""

    name = "ctx-seen"
    uses_context = True
    log: list[tuple[str, int, Any]] = []
    scored: list[Any] = []

    def score(self, node: TreeNode) -> float:
        Seen.scored.append(node.context)
        return float(node.last_access_time)

    def on_insert(self, node: TreeNode) -> None:
        Seen.log.append(("insert", int.from_bytes(node.value[:8], "big"), node.context))

    def on_hit(self, node: TreeNode) -> None:
        Seen.log.append(("hit", int.from_bytes(node.value[:8], "big"), node.context))


class Blind(Seen):
    name = "ctx-blind"
    uses_context = False


class Plugin:
    @hookimpl
    def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name="ctx-seen", policy=Seen, summary="notes contexts"))
        register(PolicySpec(name="ctx-blind", policy=Blind, summary="the same, blind"))


@pytest.fixture
def policies(vllm: types.ModuleType) -> Iterator[None]:
    registry.add_plugin(Plugin(), name="ctx-ep", distribution="acme-ctx", version="1.0")
    Seen.log, Seen.scored = [], []
    yield
    registry.remove_plugin("ctx-ep")


def manager(policy: str, chunks: int) -> Any:
    return build_manager({"cpu_bytes_to_use": 1, "eviction_policy": f"radix_evict_{policy}",
                          "cache_policy_module_path": "radix_evict.vllm"}, num_chunks=chunks)


def sent(**fields: Any) -> dict[str, Any]:
    return {vllm_context.PARAMS_KEY: fields, "kv_load_tiers": ["cpu"]}


def test_the_tier_records_each_requests_id_and_what_its_client_sent(policies: None) -> None:
    m = manager("ctx-seen", 4)
    r0 = RequestContext(session="chat-1", turn=0, kind="image", priority=2, arrival=17.5,
                        output_len=40, rid="r0")
    r1 = RequestContext(session="chat-1", parent="r0", turn=1, rid="r1")
    r2 = RequestContext(rid="r2")
    out = replay(m, [[1, 2, 3], [1, 2, 4], [5, 6]], record=True, transfer_params=[
        sent(session="chat-1", turn=0, kind="image", priority=2, arrival=17.5, output_len=40),
        sent(session="chat-1", parent="r0", turn=1, unknown="ignored"),
    ])
    assert out.hits == [0, 2, 0] and out.evictions[2]  # r2 needed room: an eviction ran
    assert Seen.log == [
        ("insert", 1, r0), ("insert", 2, r0), ("insert", 3, r0),
        ("insert", 4, r1), ("hit", 1, r1), ("hit", 2, r1),  # r1 stored 4, then finished
        ("insert", 5, r2), ("insert", 6, r2),
    ]
    tree = m._policy.tree
    contexts = {b: tree.node(chunk_key(b)).context for b in (1, 2, 4, 5, 6)
                if tree.node(chunk_key(b)) is not None}
    assert contexts[5] == contexts[6] == r2 and contexts.get(4, r1) == r1
    assert r0 in Seen.scored and r1 in Seen.scored and None not in Seen.scored


def test_a_chunk_keeps_the_context_of_the_last_request_to_use_it(policies: None) -> None:
    """Two requests load the same chunks; the one that finishes last is the last to use
    them (vLLM's finish stamps them): its context is theirs. vLLM's touch records too."""
    from vllm.v1.kv_offload.base import ReqContext

    m = manager("ctx-seen", 8)
    replay(m, [[1, 2]])
    keys = [chunk_key(1), chunk_key(2)]
    a, b = (ReqContext(req_id=rid, kv_transfer_params=sent(session=rid)) for rid in "ab")
    for rc in (a, b):
        m.on_new_request(rc)
        for i, key in enumerate(keys):
            rc.set_offload_key_position(key, (i + 1) * 16)
        m.prepare_load(keys, rc)
    tree = m._policy.tree
    ctx_a, ctx_b = (RequestContext(session=rid, rid=rid) for rid in "ab")
    assert [tree.node(k).context for k in keys] == [ctx_b, ctx_b]  # b met them last
    for rc in (b, a):
        m.complete_load(keys, rc)
        m.on_request_finished(rc)
    assert [tree.node(k).context for k in keys] == [ctx_a, ctx_a]  # a finished last
    assert Seen.log[-2:] == [("hit", 1, ctx_a), ("hit", 2, ctx_a)]
    c = ReqContext(req_id="c", kv_transfer_params=sent(kind="tool"))
    m.touch([keys[0]], c)
    assert tree.node(keys[0]).context == RequestContext(kind="tool", rid="c")
    assert tree.node(keys[1]).context == ctx_a


def test_a_field_of_the_wrong_type_is_left_none_and_logged_once(
    policies: None, caplog: pytest.LogCaptureFixture
) -> None:
    m = manager("ctx-seen", 8)
    bad = sent(session=["a"], turn=-1, priority="high", arrival=float("nan"), kind="text")
    with caplog.at_level(logging.WARNING, logger="radix_evict.vllm"):
        vllm_context._warned.clear()
        replay(m, [[1], [2], [3]], transfer_params=[bad, bad, {vllm_context.PARAMS_KEY: 7}])
    assert [c for _, _, c in Seen.log] == [
        RequestContext(kind="text", rid="r0"), RequestContext(kind="text", rid="r1"),
        RequestContext(rid="r2")]  # fmt: skip
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 5 and all("wrong type" in w for w in warned)  # once per field


def test_a_policy_without_uses_context_gets_none_and_nothing_is_built(
    policies: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(req_context: Any) -> Any:
        raise AssertionError("a context was built for a policy that reads none")

    monkeypatch.setattr(cache_policy, "request_context", never)
    m = manager("ctx-blind", 4)
    assert m._policy.tree.uses_context is False
    out = replay(m, [[1, 2, 3], [1, 2, 4], [5, 6]], record=True,
                 transfer_params=[sent(session="chat-1", turn=0)] * 3)
    assert out.hits == [0, 2, 0]
    assert {e for e, _, _ in Seen.log} == {"insert", "hit"}
    assert all(c is None for _, _, c in Seen.log) and all(c is None for c in Seen.scored)
    tree = m._policy.tree
    assert all(tree.node(k).context is None for k in list(tree._nodes))


def test_the_context_is_built_once_per_request(vllm: types.ModuleType) -> None:
    from vllm.v1.kv_offload.base import ReqContext

    rc = ReqContext(req_id="x", kv_transfer_params=sent(session=3))
    first = vllm_context.request_context(rc)
    assert first == RequestContext(session=3, rid="x")
    assert vllm_context.request_context(rc) is first and rc.get_state(RequestContext) is first
    assert vllm_context.build(ReqContext(req_id="y")) == RequestContext(rid="y")
