"""What a request tells the cache about itself, for policies that want more than the node.

A caller that knows its request (the simulator's replays, a serving engine)
passes a :class:`RequestContext` to ``match_prefix`` and ``insert``; the cache
records it on every node the call walks or creates (``node.context``: the
last request that touched the node), before the policy's callbacks and
scores run, so both can read it. Without one the cache records nothing, and
a policy that never reads it costs what it did before.

The last four fields are *hints*: what a client or an agent framework knows
about the request's future and may pass in. They are None unless a source
fills them, so every decision that does not read them is unchanged. Where
each comes from in production (docs/hints.md has the table with sources):

- ``session_end``: SGLang 0.5.23 marks a session whose client asked to close
  it while this request was still running (``Session.close_on_finish``,
  ``srt/session/session_controller.py`` 98, set at 433); vLLM 0.33.0 passes
  whatever the client sends in ``kv_transfer_params`` / ``kv_hints``
  (``v1/kv_offload/base.py`` 92-95); an agent framework knows its last step.
- ``retention_s``: SGLang's session ``timeout`` given at ``open_session``
  (``srt/managers/io_struct.py`` 2433, ``session_controller.py`` 90-95, 107-110);
  public APIs' prompt-cache retention (vLLM 0.33.0 accepts and ignores
  ``prompt_cache_retention``, ``entrypoints/openai/responses/protocol.py`` 340).
- ``next_request_s``: an agent waiting on a tool knows roughly when it will
  call again (Continuum, 2025); no engine request carries it yet, so only a
  client channel (vLLM's ``kv_transfer_params``) or a trace's hint model fills it.
- ``cache_key``: SGLang's ``extra_key`` (``io_struct.py`` 325,
  ``schedule_batch.py`` 1170); public APIs' prompt cache key (vLLM 0.33.0
  accepts and ignores ``prompt_cache_key``, ``responses/protocol.py`` 325).

A simulated trace fills them only through :mod:`radix_evict.sim.hints`, a
"what if clients sent this" model: no trace format in the repository records them.
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

    Hints (module docstring): ``session_end`` True when this request is its
    session's last; ``retention_s`` the seconds the client asked its prefix to
    be kept; ``next_request_s`` the expected seconds until the session's next
    request; ``cache_key`` the client's cache key.
    """

    session: int | str | None = None
    parent: int | str | None = None
    turn: int | None = None
    kind: str | None = None
    priority: int | None = None
    arrival: float | None = None
    output_len: int | None = None
    rid: str | None = None
    session_end: bool | None = None
    retention_s: float | None = None
    next_request_s: float | None = None
    cache_key: str | None = None

    @property
    def has_hints(self) -> bool:
        """Whether any hint field is set (a policy's fast path when none is)."""
        return (self.session_end is not None or self.retention_s is not None
                or self.next_request_s is not None or self.cache_key is not None)
