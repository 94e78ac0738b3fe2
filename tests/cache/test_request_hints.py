"""The hint fields of RequestContext: None by default, so no existing decision changes."""

from __future__ import annotations

import dataclasses

from radix_evict.cache.context import RequestContext

HINTS = ("session_end", "retention_s", "next_request_s", "cache_key")


def test_hints_default_to_none() -> None:
    ctx = RequestContext(session=3, turn=1)
    assert all(getattr(ctx, name) is None for name in HINTS)
    assert not ctx.has_hints
    names = [f.name for f in dataclasses.fields(RequestContext)]
    assert names[-4:] == list(HINTS)  # appended: positional construction is unchanged


def test_any_hint_counts() -> None:
    for name, value in (("session_end", False), ("retention_s", 0.0),
                        ("next_request_s", 3.5), ("cache_key", "k")):
        assert RequestContext(**{name: value}).has_hints, name
