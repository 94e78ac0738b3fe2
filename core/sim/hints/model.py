"""A workload whose requests carry hints: "what if clients sent this".

:func:`with_hints` copies a workload; the copy's ``context_of`` adds each
hint to the request's :class:`~radix_evict.cache.context.RequestContext`:

- a session's client sends a hint with probability ``coverage`` (drawn once per
  session: a client sends it on all its requests or on none);
- a sent hint is wrong with probability ``error`` (drawn per request): a
  session-end hint is flipped (a continuing turn says "ended", a last turn says
  "not ended"), a next-request time is off by a factor of 10 either way.

Draws come from ``random.Random`` seeded by text (``seed``, kind, session or
request id), so a run repeats across processes and ``PYTHONHASHSEED``, and a
session's draw does not depend on which other sessions exist. A client that sends a hint names its
session too: where the workload's contexts have none (a Mooncake trace), the
hinted requests carry the session the hint model derived. Everything else
(events, sizes, description) is the inner workload's; ``describe()`` adds
``hints`` with each spec and ``what_if``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from radix_evict.cache.context import RequestContext
from radix_evict.sim.hints.spec import NEXT_REQUEST, SESSION_END, HintSpec, parse_hints
from radix_evict.sim.hints.truth import Truth, next_requests, session_ends
from radix_evict.sim.workloads import Request, Workload

WHAT_IF = "what if clients sent this: derived from the trace, which records no hints"
FIELD = {SESSION_END: "session_end", NEXT_REQUEST: "next_request_s"}
WRONG_FACTOR = 10.0  # a wrong next-request time: this many times too long or too short


def _draw(*parts: object) -> float:
    """A uniform draw in [0, 1) fixed by ``parts`` (text-seeded: no hash randomisation)."""
    return random.Random(":".join(map(str, parts))).random()


def sent_hints(truth: Truth, spec: HintSpec) -> dict[str, Any]:
    """The hint each request's client sends under ``spec`` (absent: sends none)."""
    covered: dict[Any, bool] = {}
    out: dict[str, Any] = {}
    for rid, (session, value) in truth.items():
        c = covered.get(session)
        if c is None:
            c = covered[session] = _draw(spec.seed, spec.kind, "session", session) < spec.coverage
        if not c:
            continue
        if spec.error and _draw(spec.seed, spec.kind, "error", rid) < spec.error:
            value = _wrong(spec.kind, value, rid, spec.seed)
        out[rid] = value
    return out


def _wrong(kind: str, value: Any, rid: str, seed: int) -> Any:
    if kind == SESSION_END:
        return not value
    up = _draw(seed, kind, "wrong-way", rid) < 0.5
    return value * WRONG_FACTOR if up else value / WRONG_FACTOR


def true_hints(workload: Workload, kind: str) -> Truth:
    """``kind``'s true value per request of ``workload`` (HintUnavailable if it has none)."""
    return session_ends(workload) if kind == SESSION_END else next_requests(workload)


def hinted(inner: Workload, specs: Sequence[HintSpec]) -> Workload:
    """A copy of ``inner`` whose ``context_of`` adds the hints ``specs`` describes.

    A shallow copy of the workload itself, not a wrapper: whatever a replay
    asks of its type (a session workload's closed-loop arrivals in the timed
    replay) stays as it was. Its ``hints`` (rid -> {field: value}) and
    ``hint_specs`` are attributes; ``describe()`` adds ``hints``.
    """
    sent: dict[str, dict[str, Any]] = {}  # rid -> {field: value}
    for spec in specs:
        truth = true_hints(inner, spec.kind)
        for rid, value in sent_hints(truth, spec).items():
            one = sent.setdefault(rid, {})
            one[FIELD[spec.kind]] = value
            one.setdefault("session", truth[rid][0])
    own_context = inner.context_of
    own_describe = inner.describe

    def context_of(req: Request) -> RequestContext:
        ctx = own_context(req)
        one = sent.get(req.rid)
        if one is None:
            return ctx
        if ctx.session is not None:  # the workload's own session id stands
            return replace(ctx, **{k: v for k, v in one.items() if k != "session"})
        return replace(ctx, **one)

    def describe() -> dict[str, Any]:
        return {**own_describe(),
                "hints": {"specs": [s.text() for s in specs], "what_if": WHAT_IF,
                          "hinted_requests": len(sent)}}

    out = copy.copy(inner)
    for name, value in (("context_of", context_of), ("describe", describe), ("hints", sent),
                        ("hint_specs", tuple(specs))):
        setattr(out, name, value)
    return out


def hints_of(workload: Workload) -> dict[str, dict[str, Any]]:
    """The hints :func:`with_hints` gave ``workload``'s requests (rid -> {field: value})."""
    sent: dict[str, dict[str, Any]] = getattr(workload, "hints", {})
    return sent


def with_hints(workload: Workload, specs: str | Sequence[str] | Sequence[HintSpec]) -> Workload:
    """``workload`` with the hints ``specs`` asks for (text as ``--hints`` takes, or specs).

    No specs: ``workload`` itself. A hint the workload cannot give raises
    HintUnavailable naming the workload and the hint.
    """
    items: list[str | HintSpec] = [specs] if isinstance(specs, str) else list(specs)
    parsed: list[HintSpec] = []
    for item in items:
        parsed.extend(parse_hints(item) if isinstance(item, str) else (item,))
    return hinted(workload, parsed) if parsed else workload
