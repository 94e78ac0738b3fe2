"""What vLLM 0.33.0's offload tier knows about a request, as the RequestContext a policy reads.

The tier sees a request only through the ``ReqContext`` its scheduler builds
(``_create_req_context`` in ``distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py``):
``req_id``, the request's ``kv_transfer_params`` and ``kv_hints``. vLLM's ``Request``
knows more (priority, arrival time, session id, media), but none of it reaches the tier.
So, for a policy with ``uses_context`` (no other gets a context built):

- ``rid``: ``req_context.req_id``, always;
- the other fields: from the object a client may send as ``kv_transfer_params`` key
  ``"radix_evict_context"`` (the same per-request channel as vLLM's own
  ``kv_load_tiers``), e.g. ``{"session": "chat-7", "parent": "req-12", "turn": 3,
  "kind": "image", "priority": 1, "arrival": 1718000000.5, "output_len": 200}``. A field
  with the wrong type is left None (logged once per field); unknown keys are ignored.
  Without the key they stay None.
- hints (docs/hints.md): ``session_end`` (true/false), ``retention_s``,
  ``next_request_s`` (seconds >= 0) and ``cache_key`` (text), from the same
  ``kv_transfer_params`` key, or from the request's ``kv_hints`` envelope
  (``ReqContext.kv_hints``, ``v1/kv_offload/base.py`` 95; an envelope of actions,
  ``v1/kv_hints/protocol.py`` 9-26, whose action types vLLM 0.33.0 leaves to the
  component): an action of type ``"radix_evict_context"`` whose ``payload`` has
  the same keys (the ``kv_transfer_params`` value wins where both give one).
  vLLM's OpenAI server accepts ``prompt_cache_key``/``prompt_cache_retention``
  and ignores them (``entrypoints/openai/responses/protocol.py`` 325, 340): they
  reach no ``Request``, so nothing here reads them.

The context is built once per request and kept in the ``ReqContext``'s per-request state.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from radix_evict.cache.context import RequestContext

logger = logging.getLogger("radix_evict.vllm")

PARAMS_KEY = "radix_evict_context"  # the kv_transfer_params key a client fills


def _id(x: Any) -> int | str | None:
    return x if isinstance(x, (int, str)) and not isinstance(x, bool) else None


def _count(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and x >= 0 else None


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _str(x: Any) -> str | None:
    return x if isinstance(x, str) else None


def _seconds(x: Any) -> float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        return float(x)
    return None


def _duration(x: Any) -> float | None:
    s = _seconds(x)
    return s if s is not None and s >= 0 else None


def _flag(x: Any) -> bool | None:
    return x if isinstance(x, bool) else None


# Each field a client may send, and how its value is read (None: refused).
FIELDS: dict[str, Callable[[Any], Any]] = {
    "session": _id,
    "parent": _id,
    "turn": _count,
    "kind": _str,
    "priority": _int,
    "arrival": _seconds,
    "output_len": _count,
    "session_end": _flag,
    "retention_s": _duration,
    "next_request_s": _duration,
    "cache_key": _str,
}
HINT_ACTION = "radix_evict_context"  # a kv_hints action type whose payload this reads
_warned: set[str] = set()


def request_context(req_context: Any) -> RequestContext:
    """The context of the request ``req_context`` (vLLM's ``ReqContext``), built once."""
    ctx: RequestContext | None = req_context.get_state(RequestContext)
    if ctx is None:
        ctx = build(req_context)
        req_context.set_state(ctx)
    return ctx


def build(req_context: Any) -> RequestContext:
    """:class:`RequestContext` from a ``ReqContext``: its id, and what the client sent."""
    rid = getattr(req_context, "req_id", None)
    fields: dict[str, Any] = {}
    for action in getattr(getattr(req_context, "kv_hints", None), "actions", None) or ():
        if getattr(action, "action_type", None) == HINT_ACTION:
            _read(getattr(action, "payload", None), fields, HINT_ACTION)
    params = getattr(req_context, "kv_transfer_params", None)
    _read(params.get(PARAMS_KEY) if isinstance(params, Mapping) else None, fields, PARAMS_KEY)
    return RequestContext(rid=None if rid is None else str(rid), **fields)


def _read(sent: Any, fields: dict[str, Any], where: str) -> None:
    """Each known field of the client's object ``sent`` into ``fields`` (wrong types refused)."""
    if isinstance(sent, Mapping):
        for name, read in FIELDS.items():
            raw = sent.get(name)
            if raw is None:
                continue
            value = read(raw)
            if value is None:
                _refused(name, raw)
                continue
            fields[name] = value
    elif sent is not None:
        _refused(where, sent)


def _refused(name: str, value: Any) -> None:
    if name in _warned:
        return
    _warned.add(name)
    logger.warning("radix-evict: kv_transfer_params[%r]: %s=%r has the wrong type, ignored "
                   "(logged once)", PARAMS_KEY, name, value)
