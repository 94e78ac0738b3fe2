"""A request inside the timed server (:class:`Job`) and the record it leaves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from radix_evict.sim.workloads import Request

__all__ = ["Job", "JobRecord"]


@dataclass(frozen=True)
class JobRecord:
    """One request's times (seconds of virtual time); ``refused`` says why it never ran."""

    rid: str
    arrival: float
    admitted: float
    first_token: float
    finish: float
    output_tokens: int
    hit_tokens: int
    prompt_tokens: int
    retractions: int
    refused: str | None = None

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival

    @property
    def queue(self) -> float:
        return self.admitted - self.arrival

    @property
    def e2e(self) -> float:
        return self.finish - self.arrival

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first; None for a one-token answer."""
        if self.output_tokens < 2:
            return None
        return (self.finish - self.first_token) / (self.output_tokens - 1)


class Job:
    """A request between arrival and finish."""

    __slots__ = (
        "admitted",
        "arrival",
        "buf",
        "chunk",
        "ctx",
        "device_len",
        "end_step",
        "first_token",
        "full",
        "gen",
        "generated",
        "held",
        "hit",
        "long",
        "node",
        "offset",
        "olen",
        "plen",
        "prefilled",
        "req",
        "retractions",
        "slot",
        "target",
        "tree_len",
    )

    def __init__(self, req: Request, arrival: float) -> None:
        self.req = req
        self.arrival = arrival
        self.full = req.tokens()
        self.plen = len(req.prompt)
        self.olen = len(self.full) - self.plen
        self.admitted = -1.0
        self.first_token = -1.0
        self.hit = -1  # prompt tokens matched at first admission (-1: not yet admitted)
        self.generated = 0
        self.target = self.plen  # tokens to prefill: the prompt (+ output so far, if retracted)
        self.prefilled = 0
        self.tree_len = 0  # buf[:tree_len] is the tree's (matched or inserted), locked by node;
        # after a checkpoint those entries may name duplicates the tree freed: never read
        self.node: Any = None
        # the slots of the tokens it holds: buf[:held]; buf has room for the whole request, so
        # a chunk or a page of growth is written in place instead of joining arrays
        self.buf: np.ndarray | None = None
        self.held = 0
        self.offset = 0  # while decoding: length = step + offset
        self.end_step = 0
        self.slot = -1  # index in the server's running arrays
        self.retractions = 0
        self.chunk = 0  # tokens this prefill batch computes for it
        self.gen = 0  # bumped on retraction: stale heap entries are skipped
        self.long = False  # joined the decode batch with more than the clip to go
        self.ctx: Any = None  # its RequestContext, when the policy reads them
        self.device_len = 0  # of tree_len at its match, the part found on device (host tier)
