"""What a timed replay refuses, and why: each limit written once, each refusal naming its input.

A timed replay runs a virtual clock in float seconds. Past about 1e9 s a
millisecond step still moves it, but the figures (differences of two clock
readings) lose their digits, and past 1e15 s a step no longer moves it at
all; a time scale of 1e308 overflows it. So arrivals are bounded where they
are specified (:data:`MAX_TIME_SCALE`, :data:`MIN_RATE`), before any replay.
A chunk smaller than a page cannot be cut (chunks are page-aligned), and a
request without a prompt has nothing to compute its first token from: both
are refused by name instead of stalling the server.
"""

from __future__ import annotations

from radix_evict.errors import RadixEvictError

__all__ = ["MAX_TIME_SCALE", "MIN_RATE", "TimedInputError", "check_chunk", "check_prompt"]

MAX_TIME_SCALE = 1e6  # a second of the workload becomes at most 11.6 days of virtual time
MIN_RATE = 1e-6  # requests per second: one per 11.6 days on average


class TimedInputError(RadixEvictError, ValueError):
    """An input a timed replay cannot use; ``field`` names it (``time_scale``, ``workload``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_chunk(chunked_prefill_size: int, page_size: int) -> None:
    """Chunks are cut page-aligned: a chunk budget under one page would cut nothing."""
    if 0 < chunked_prefill_size < page_size:
        raise TimedInputError(
            "chunked_prefill_size",
            f"chunked_prefill_size {chunked_prefill_size:,} is smaller than a page "
            f"({page_size:,} tokens): chunks are whole pages, so no chunk could be cut; give "
            f"at least {page_size:,}, or 0 for no chunking")


def check_prompt(rid: str, workload: str, prompt_tokens: int) -> None:
    """A server computes the first output token from the prompt: it needs one token at least."""
    if prompt_tokens < 1:
        raise TimedInputError(
            "workload",
            f"{workload}: request {rid} has an empty prompt (input length 0); a server "
            "computes the first output token from at least one prompt token, so the timed "
            "replay cannot serve it: drop the request from the input")
