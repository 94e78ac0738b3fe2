"""The hints SGLang 0.5.23's own Req and Session carry reach the RequestContext.

A session's idle timeout is its retention, ``extra_key`` the client's cache key,
and a close that arrives while a request runs (``close_on_finish``) ends the session
with that request. Nothing in SGLang carries an expected next-request time.
"""

from __future__ import annotations

from helpers.sglang_env import import_sglang
from helpers.sglang_rig import sglang_req

from radix_evict.sglang import context


def _session(timeout: float | None) -> object:
    import_sglang()
    from sglang.srt.session.session_controller import Session

    return Session(capacity_of_str_len=1000, session_id="chat-1", timeout=timeout)


def test_request_without_session_has_no_hints() -> None:
    import_sglang()
    ctx = context.build(sglang_req("r0", [1, 2, 3]))
    assert not ctx.has_hints


def test_cache_key_and_retention() -> None:
    req = sglang_req("r1", [1, 2, 3], extra_key="tenant-a")
    req.session = _session(30.0)
    ctx = context.build(req)
    assert ctx.cache_key == "tenant-a"
    assert ctx.retention_s == 30.0
    assert ctx.session_end is None and ctx.next_request_s is None


def test_close_on_finish_ends_the_session_at_the_checkpoint() -> None:
    req = sglang_req("r2", [1, 2, 3])
    session = _session(None)
    req.session = session
    assert context.build(req).session_end is None
    session.close_on_finish = True  # the client closed it while r2 ran
    assert context.build(req).session_end is True
