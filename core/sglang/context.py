"""What SGLang 0.5.23 knows about a request, as the RequestContext a policy reads.

Only for a policy that sets ``uses_context = True``: for any other the plugin builds nothing
and records nothing (one attribute test per tree operation). The fields, from SGLang's
``Req`` (``srt/managers/schedule_batch.py``) and its session
(``srt/session/session_controller.py``):

- ``rid``: ``req.rid``;
- ``session``: ``req.session_id`` (a radix-native session), else the id of the session
  the request was created in (``req.session.session_id``), else None;
- ``parent``, ``turn``: in a session the scheduler keeps as a tree of requests
  (``session.req_nodes``), the rid of the request this one continues and its depth in
  that tree (0 first); a streaming session keeps only the previous request, so there
  ``parent`` is that request's rid and ``turn`` stays None; None outside a session;
- ``kind``: ``text``, or the modality of the media in the prompt (``image``, ``video``,
  ``audio``; ``multimodal`` when it mixes them; a session's earlier turns count),
  or ``embeds`` for a request that sent input embeddings instead of tokens;
- ``priority``: ``req.priority`` as the scheduler holds it (None when the client gave
  none and priority scheduling is off; with it on, SGLang's default fills it in);
- ``arrival``: ``req.time_stats.scheduler_recv_time``, seconds on the scheduler
  process's ``time.perf_counter()`` clock (comparable only within one scheduler);
- ``output_len``: the tokens the request generated, known once it has finished: set on
  what its final checkpoint inserts (``len(req.output_ids_through_stop)``); None before.
  ``sampling_params.max_new_tokens`` is only a bound, so it is not used.

Hints (docs/hints.md), only what SGLang 0.5.23's objects carry:

- ``session_end``: True when the request's session is marked to close once its
  requests finish (``Session.close_on_finish``, ``srt/session/session_controller.py``
  98, set by a close that arrives while a request runs, 433); read at the
  checkpoint, when the request finishes. None outside a session or before a close.
- ``retention_s``: the session's idle ``timeout`` its client gave at ``open_session``
  (``srt/managers/io_struct.py`` 2433, ``session_controller.py`` 90-95): the
  session is closed after that many idle seconds (107-110).
- ``cache_key``: ``req.extra_key`` (``io_struct.py`` 325, ``schedule_batch.py``
  1170: the client's key, with a LoRA id appended).
- ``next_request_s``: nothing in SGLang carries it (None).

A request's context is built once, at its first lookup, and kept on the ``Req`` (the
scheduler drops a finished request's media, so it is read while it is there); the final
checkpoint's copy adds ``output_len``. Where it is recorded: on the nodes a lookup with a
request walks (``match_prefix`` with ``params.req``: the scheduler's ``match_kv_cache``),
and on the nodes a ``checkpoint(req, ...)`` insert walks or creates; a split's new head
inherits the tail's. Lookups without a request (``touch_prefix``, the legacy
checkpoint's re-match) and inserts outside a checkpoint record nothing and erase nothing.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from radix_evict.cache.context import RequestContext

REQ_CONTEXT = "_radix_evict_context"  # on a Req: its context, built once
NODE_CONTEXT = "_radix_evict_context"  # on an SGLang node: the last request's context
TREE_REQUEST = "_radix_evict_request"  # on a tree while a request's operation runs


def of_req(req: Any) -> RequestContext | None:
    """``req``'s context, built on first use and kept on it (None: no request)."""
    if req is None:
        return None
    ctx: RequestContext | None = getattr(req, REQ_CONTEXT, None)
    if ctx is None:
        ctx = build(req)
        with contextlib.suppress(AttributeError, TypeError):  # else: built again next time
            setattr(req, REQ_CONTEXT, ctx)
    return ctx


def at_checkpoint(req: Any) -> RequestContext | None:
    """The context a checkpoint of ``req`` records: a finished request's knows its output."""
    ctx = of_req(req)
    if ctx is None or ctx.output_len is not None or not _finished(req):
        return ctx
    n = _output_len(req)
    closing = _session_closing(req)
    if n is None and closing is None:
        return ctx
    return replace(ctx, output_len=n, session_end=closing or ctx.session_end)


def build(req: Any) -> RequestContext:
    """The :class:`RequestContext` of an SGLang ``Req`` (every field read defensively)."""
    session_obj = getattr(req, "session", None)
    session = getattr(req, "session_id", None)
    if session is None and session_obj is not None:
        session = getattr(session_obj, "session_id", None)
    parent, turn = _lineage(req, session_obj)
    rid = getattr(req, "rid", None)
    return RequestContext(
        session=session if isinstance(session, (int, str)) else None,
        parent=parent,
        turn=turn,
        kind=_kind(req),
        priority=_int(getattr(req, "priority", None)),
        arrival=_arrival(req),
        output_len=None,
        rid=None if rid is None else str(rid),
        session_end=_session_closing(req),
        retention_s=_seconds(getattr(session_obj, "timeout", None)),
        cache_key=_key(getattr(req, "extra_key", None)),
    )


def _session_closing(req: Any) -> bool | None:
    """True when ``req``'s session is to close once its requests finish; else None."""
    session = getattr(req, "session", None)
    return True if getattr(session, "close_on_finish", False) is True else None


def _seconds(x: Any) -> float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0:
        return float(x)
    return None


def _key(x: Any) -> str | None:
    return x if isinstance(x, str) and x else None


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _finished(req: Any) -> bool:
    finished = getattr(req, "finished", None)
    try:
        return bool(finished()) if callable(finished) else False
    except Exception:
        return False


def _output_len(req: Any) -> int | None:
    out = getattr(req, "output_ids_through_stop", None)
    if out is None:
        out = getattr(req, "output_ids", None)
    try:
        return None if out is None else len(out)
    except TypeError:
        return None


def _arrival(req: Any) -> float | None:
    t = getattr(getattr(req, "time_stats", None), "scheduler_recv_time", None)
    if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
        return float(t)
    return None


def _lineage(req: Any, session: Any) -> tuple[str | None, int | None]:
    """(parent rid, turn) from the session's tree of requests."""
    nodes = getattr(session, "req_nodes", None)
    if not isinstance(nodes, dict):
        return None, None
    rid = getattr(req, "rid", None)
    if getattr(session, "streaming", False):
        # Only the previous request is kept (until this one finishes): no depth.
        for node in nodes.values():
            prev = getattr(node, "req", None)
            if prev is not None and prev is not req:
                prid = getattr(prev, "rid", None)
                return (None if prid is None else str(prid)), None
        return None, None
    node = nodes.get(rid)
    if node is None or getattr(node, "req", None) is not req:
        return None, None
    up = getattr(node, "parent", None)
    parent_rid = getattr(getattr(up, "req", None), "rid", None)
    turn = 0
    while up is not None and turn < 1_000_000:
        turn += 1
        up = getattr(up, "parent", None)
    return (None if parent_rid is None else str(parent_rid)), turn


def _kind(req: Any) -> str:
    mm = getattr(req, "multimodal_inputs", None)
    items = getattr(mm, "mm_items", None) or ()
    kinds = set()
    for item in items:
        modality = getattr(item, "modality", None)
        name = getattr(modality, "name", None)
        if isinstance(name, str):
            kinds.add("image" if name.upper() in ("IMAGE", "MULTI_IMAGES") else name.lower())
    if len(kinds) == 1:
        return kinds.pop()
    if kinds:
        return "multimodal"
    if getattr(req, "input_embeds", None) is not None:
        return "embeds"
    return "text"


def record(nodes: Any, ctx: RequestContext) -> None:
    """Make ``ctx`` the last request to have touched each of ``nodes`` (SGLang nodes)."""
    for x in nodes:
        setattr(x, NODE_CONTEXT, ctx)


def inherit(head: Any, tail: Any) -> None:
    """A split's new head describes the tail's prefix: it keeps the tail's context."""
    ctx = getattr(tail, NODE_CONTEXT, None)
    if ctx is not None:
        setattr(head, NODE_CONTEXT, ctx)


def node_context(node: Any) -> RequestContext | None:
    """The context recorded on an SGLang node (None: no request with one touched it)."""
    return getattr(node, NODE_CONTEXT, None)
