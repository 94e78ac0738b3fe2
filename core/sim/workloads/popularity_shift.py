"""`popularity-shift`: the hot set of documents changes part-way through.

Before the shift, requests go to hot set A; after it, to hot set B, where
``shift_fraction`` of A's documents are replaced by new ones. Frequency counts
earned before the shift keep stale documents alive under lfu; recency adapts.
The default pool holds one hot set with ``pool_factor - 1`` to spare.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    Session,
    SessionWorkload,
    check_fraction,
    check_integers,
    check_ordered,
    check_positive,
)
from radix_evict.sim.workloads.common import DocParams, documents, question, round_pool, zipf_probs

NAME = "popularity-shift"
SUMMARY = "a hot set of documents that is replaced part-way through (stale popularity)"


@dataclass(frozen=True, kw_only=True)
class ShiftParams(DocParams):
    """Parameters of `popularity-shift`."""

    requests: int = field(default=2400, metadata={"doc": "requests in all"})
    hot_docs: int = field(default=24, metadata={"doc": "documents in each hot set"})
    doc_min: int = field(default=400, metadata={"doc": "shortest document (tokens)"})
    doc_max: int = field(default=1600, metadata={"doc": "longest document (tokens)"})
    zipf: float = field(
        default=0.6, metadata={"doc": "Zipf exponent of popularity within a hot set"}
    )
    shift_at: float = field(
        default=0.5, metadata={"doc": "share of the requests served before the shift"}
    )
    shift_fraction: float = field(
        default=1.0, metadata={"doc": "share of the hot documents replaced at the shift"}
    )
    pool_factor: float = field(
        default=1.3, metadata={"doc": "default pool = pool_factor x the larger hot set's tokens"}
    )

    def validate(self) -> None:
        super().validate()
        check_integers(self, "requests", "hot_docs", "doc_min", "doc_max")
        check_positive(self, "requests", "hot_docs", "doc_min", "pool_factor")
        check_ordered(self, "doc_min", "doc_max")
        check_fraction(self, "shift_at", "shift_fraction")


def build_popularity_shift(seed: int = 0, params: ShiftParams | None = None) -> SessionWorkload:
    """Generate `popularity-shift` for ``seed``."""
    p = params or ShiftParams()
    rng = np.random.default_rng(seed)
    before = documents(rng, p.hot_docs, p.doc_min, p.doc_max, p.vocab)
    replaced = round(p.shift_fraction * p.hot_docs)
    fresh = documents(rng, replaced, p.doc_min, p.doc_max, p.vocab)
    # Which ranks get new documents: a random subset, so popular ones change too.
    ranks = sorted(rng.choice(p.hot_docs, size=replaced, replace=False).tolist())
    after = list(before)
    for rank, doc in zip(ranks, fresh, strict=True):
        after[rank] = doc
    probs = zipf_probs(p.hot_docs, p.zipf)
    shift = round(p.shift_at * p.requests)
    sessions: list[Session] = []
    t = 0.0
    for i in range(p.requests):
        t += rng.exponential(1.0 / p.rate)
        phase = "before" if i < shift else "after"
        d = int(rng.choice(p.hot_docs, p=probs))
        doc = before[d] if phase == "before" else after[d]
        sessions.append(question(rng, t, doc, p, kind=phase))
    set_tokens = max(sum(len(d) for d in before), sum(len(d) for d in after))
    return SessionWorkload(
        NAME,
        sessions,
        p,
        seed=seed,
        default_pool_tokens=round_pool(p.pool_factor * set_tokens),
        info={"shift_request": shift, "replaced_docs": replaced, "hot_set_tokens": set_tokens},
    )
