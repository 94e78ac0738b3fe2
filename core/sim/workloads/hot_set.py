"""`hot-set-with-scans`: a stable hot set of documents, interrupted by bursts of one-off scans.

Every so often a burst of long prompts that are never seen again (a batch
job, a crawl) passes through. Recency-only eviction lets each burst flush the
hot set; frequency-aware eviction (lfu, slru) keeps it. The default pool holds
the hot set with ``pool_factor - 1`` to spare, less than one burst.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    Session,
    SessionWorkload,
    Turn,
    check_integers,
    check_non_negative,
    check_ordered,
    check_positive,
)
from radix_evict.sim.workloads.common import (
    ASSIST_HDR,
    DocParams,
    content,
    documents,
    length,
    question,
    round_pool,
    zipf_probs,
)

NAME = "hot-set-with-scans"
SUMMARY = "a stable hot set of documents plus bursts of one-off long prompts (scans)"
EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class HotSetParams(DocParams):
    """Parameters of `hot-set-with-scans`."""

    hot_requests: int = field(default=2400, metadata={"doc": "requests for hot documents"})
    hot_docs: int = field(default=24, metadata={"doc": "documents in the hot set"})
    doc_min: int = field(default=400, metadata={"doc": "shortest hot document (tokens)"})
    doc_max: int = field(default=1600, metadata={"doc": "longest hot document (tokens)"})
    zipf: float = field(default=0.6, metadata={"doc": "Zipf exponent of hot-document popularity"})
    scan_every: int = field(default=200, metadata={"doc": "hot requests between two scan bursts"})
    scan_burst: int = field(default=8, metadata={"doc": "one-off prompts per burst"})
    scan_min: int = field(default=3000, metadata={"doc": "shortest scan prompt (tokens)"})
    scan_max: int = field(default=6000, metadata={"doc": "longest scan prompt (tokens)"})
    scan_spacing: float = field(default=1.0, metadata={"doc": "seconds between scans of a burst"})
    pool_factor: float = field(
        default=1.5,
        metadata={"doc": "default pool = pool_factor x hot-set tokens (rounded up to 1024)"},
    )

    def validate(self) -> None:
        super().validate()
        check_integers(
            self,
            "hot_requests",
            "hot_docs",
            "doc_min",
            "doc_max",
            "scan_every",
            "scan_burst",
            "scan_min",
            "scan_max",
        )
        check_positive(
            self,
            "hot_requests",
            "hot_docs",
            "doc_min",
            "scan_every",
            "scan_min",
            "pool_factor",
            "scan_spacing",
        )
        check_ordered(self, "doc_min", "doc_max")
        check_ordered(self, "scan_min", "scan_max")
        check_non_negative(self, "scan_burst")


def build_hot_set(seed: int = 0, params: HotSetParams | None = None) -> SessionWorkload:
    """Generate `hot-set-with-scans` for ``seed``."""
    p = params or HotSetParams()
    rng = np.random.default_rng(seed)
    docs = documents(rng, p.hot_docs, p.doc_min, p.doc_max, p.vocab)
    probs = zipf_probs(p.hot_docs, p.zipf)
    sessions: list[Session] = []
    t = 0.0
    bursts = 0
    for i in range(p.hot_requests):
        t += rng.exponential(1.0 / p.rate)
        if i and i % p.scan_every == 0 and p.scan_burst:
            bursts += 1
            for j in range(p.scan_burst):
                prompt = content(rng, int(rng.integers(p.scan_min, p.scan_max + 1)), p.vocab)
                out = content(rng, length(rng, p.out_median, 0.6, 2, 2000), p.vocab, ASSIST_HDR)
                sessions.append(
                    Session(t + j * p.scan_spacing, EMPTY, [Turn(prompt, out, 0.0, "scan")])
                )
        d = int(rng.choice(p.hot_docs, p=probs))
        sessions.append(question(rng, t, docs[d], p, kind="hot"))
    hot_tokens = sum(len(d) for d in docs)
    sessions.sort(key=lambda s: s.start)
    return SessionWorkload(
        NAME,
        sessions,
        p,
        seed=seed,
        default_pool_tokens=round_pool(p.pool_factor * hot_tokens),
        info={"hot_set_tokens": hot_tokens, "scan_bursts": bursts},
    )
