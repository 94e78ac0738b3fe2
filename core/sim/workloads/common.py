"""Building blocks the scenario generators share: lengths, token runs, question requests.

The scenario workloads (hot set, popularity shift, priority tiers) are made
of *document requests*: a shared document or system prompt followed by a
short unique question, answered by a short reply. Only the document can be
hit, so the policies differ in which documents they keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    ASSIST_HDR,
    FIRST_CONTENT_TOKEN,
    USER_HDR,
    Session,
    Tokens,
    Turn,
    WorkloadError,
    WorkloadParams,
    check_integers,
    check_positive,
)

POOL_ROUNDING = 1024


@dataclass(frozen=True, kw_only=True)
class DocParams(WorkloadParams):
    """Parameters shared by the document-request workloads."""

    question_median: float = field(
        default=40.0, metadata={"doc": "median unique question (tokens)"}
    )
    out_median: float = field(default=60.0, metadata={"doc": "median reply (tokens)"})
    rate: float = field(default=10.0, metadata={"doc": "requests per simulated second (Poisson)"})
    vocab: int = field(
        default=50000, metadata={"doc": "content tokens are drawn from 100..vocab-1"}
    )

    def validate(self) -> None:
        super().validate()
        check_integers(self, "vocab")
        check_positive(self, "question_median", "out_median", "rate")
        if self.vocab <= FIRST_CONTENT_TOKEN:
            raise WorkloadError(f"vocab must be > {FIRST_CONTENT_TOKEN}, got {self.vocab}")


def length(rng: np.random.Generator, median: float, sigma: float, lo: int, hi: int) -> int:
    """A lognormal length around ``median``, clipped to [lo, hi]."""
    return int(np.clip(rng.lognormal(np.log(median), sigma), lo, hi))


def content(rng: np.random.Generator, n: int, vocab: int, hdr: tuple[int, ...] = ()) -> Tokens:
    """``hdr`` followed by ``n`` random content tokens."""
    body = rng.integers(FIRST_CONTENT_TOKEN, vocab, size=n, dtype=np.int64)
    return np.concatenate([np.asarray(hdr, dtype=np.int64), body]) if hdr else body


def documents(rng: np.random.Generator, n: int, lo: int, hi: int, vocab: int) -> list[Tokens]:
    """``n`` random documents of uniform length in [lo, hi]."""
    return [content(rng, int(rng.integers(lo, hi + 1)), vocab) for _ in range(n)]


def zipf_probs(n: int, s: float) -> np.ndarray:
    """Popularity of ranks 1..n proportional to 1/rank**s (s = 0: uniform)."""
    w = 1.0 / np.arange(1, n + 1) ** s
    return np.asarray(w / w.sum())


def question(
    rng: np.random.Generator,
    start: float,
    doc: Tokens,
    p: DocParams,
    priority: int = 0,
    kind: str = "user",
) -> Session:
    """A one-turn session: ``doc`` + a unique question, and a short reply."""
    q = content(rng, length(rng, p.question_median, 0.6, 4, 2000), p.vocab, USER_HDR)
    out = content(rng, length(rng, p.out_median, 0.6, 2, 2000), p.vocab, ASSIST_HDR)
    return Session(start, doc, [Turn(q, out, 0.0, kind)], priority)


def round_pool(tokens: float) -> int:
    """Round a pool size up to a multiple of 1024 tokens (a readable default)."""
    return int(-(-int(tokens) // POOL_ROUNDING) * POOL_ROUNDING)
