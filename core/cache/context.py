"""What a request tells the cache about itself, for policies that want more than the node.

A caller that knows its request (the simulator's replays, a serving engine)
passes a :class:`RequestContext` to ``match_prefix`` and ``insert``; the cache
records it on every node the call walks or creates (``node.context``: the
last request that touched the node), before the policy's callbacks and
scores run, so both can read it. Without one the cache records nothing, and
a policy that never reads it costs what it did before.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestContext"]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request as its engine or trace describes it. Every field may be unknown (None).

    ``session``: the conversation (session, chat) it belongs to; ``parent``: the
    request it continues (a chat's previous turn); ``turn``: its place in the
    session, 0 first; ``kind``: what it carries (``text``, ``image``, ``file``,
    ``tool``, or the trace's own word); ``priority``: the scheduling priority;
    ``arrival``: when it arrived (seconds); ``output_len``: the tokens it will
    generate, when known (a trace records it; a live engine knows only its cap);
    ``rid``: its id.
    """

    session: int | str | None = None
    parent: int | str | None = None
    turn: int | None = None
    kind: str | None = None
    priority: int | None = None
    arrival: float | None = None
    output_len: int | None = None
    rid: str | None = None
