"""The hints a client sends reach the RequestContext through vLLM 0.33.0's ReqContext.

Two channels: ``kv_transfer_params["radix_evict_context"]`` and a ``kv_hints`` envelope
action of type ``radix_evict_context``; the first wins where both give a field.
"""

from __future__ import annotations

import types

from radix_evict.vllm import context as vllm_context


def _req(vllm: types.ModuleType, params: object = None, hints: object = None) -> object:
    from vllm.v1.kv_offload.base import ReqContext

    return ReqContext(req_id="r1", kv_transfer_params=params, kv_hints=hints)


def _envelope(payload: dict[str, object], action_type: str = "radix_evict_context") -> object:
    from vllm.v1.kv_hints.protocol import KvHintAction, KvHintsEnvelope

    action = KvHintAction(action_id="a1", action_type=action_type, action_version="1",
                          payload=payload)
    return KvHintsEnvelope(protocol_version="1", message_id="m1", actions=[action])


def test_params_carry_hints(vllm: types.ModuleType) -> None:
    sent = {"session_end": True, "retention_s": 60, "next_request_s": 2.5, "cache_key": "k"}
    ctx = vllm_context.build(_req(vllm, {"radix_evict_context": sent}))
    assert (ctx.session_end, ctx.retention_s, ctx.next_request_s, ctx.cache_key) == (
        True, 60.0, 2.5, "k")


def test_envelope_carries_hints_and_params_win(vllm: types.ModuleType) -> None:
    env = _envelope({"session_end": True, "retention_s": 10.0})
    ctx = vllm_context.build(_req(vllm, {"radix_evict_context": {"retention_s": 5}}, env))
    assert ctx.session_end is True and ctx.retention_s == 5.0
    other = vllm_context.build(_req(vllm, None, _envelope({"session_end": True}, "other")))
    assert other.session_end is None


def test_bad_hint_values_are_refused(vllm: types.ModuleType) -> None:
    sent = {"session_end": "yes", "retention_s": -1, "next_request_s": float("nan")}
    ctx = vllm_context.build(_req(vllm, {"radix_evict_context": sent}))
    assert not ctx.has_hints
