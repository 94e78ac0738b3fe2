"""`priority-tiers`: tenants with different request priorities share one pool.

Tenant ``k`` (0-based) sends requests of priority ``k`` against its own
documents; all tenants send at the same rate. The pool holds only part of
all tenants' documents, so a policy decides whose documents stay. Replay
results report the hit rate per priority tier (``ReplayResult.tiers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    Session,
    SessionWorkload,
    check_integers,
    check_ordered,
    check_positive,
)
from radix_evict.sim.workloads.common import DocParams, documents, question, round_pool, zipf_probs

NAME = "priority-tiers"
SUMMARY = "tenants of priority 0..n-1 competing for one pool; hit rate per tier"


@dataclass(frozen=True, kw_only=True)
class TierParams(DocParams):
    """Parameters of `priority-tiers`."""

    requests: int = field(
        default=2400, metadata={"doc": "requests in all (tenants take turns at random)"}
    )
    tenants: int = field(default=3, metadata={"doc": "tenants; tenant k sends priority k"})
    docs_per_tenant: int = field(default=12, metadata={"doc": "documents each tenant asks about"})
    doc_min: int = field(default=400, metadata={"doc": "shortest document (tokens)"})
    doc_max: int = field(default=1600, metadata={"doc": "longest document (tokens)"})
    zipf: float = field(
        default=0.6, metadata={"doc": "Zipf exponent of popularity within a tenant"}
    )
    pool_factor: float = field(
        default=0.8, metadata={"doc": "default pool = pool_factor x all tenants' document tokens"}
    )

    def validate(self) -> None:
        super().validate()
        check_integers(self, "requests", "tenants", "docs_per_tenant", "doc_min", "doc_max")
        check_positive(self, "requests", "tenants", "docs_per_tenant", "doc_min", "pool_factor")
        check_ordered(self, "doc_min", "doc_max")


def build_priority_tiers(seed: int = 0, params: TierParams | None = None) -> SessionWorkload:
    """Generate `priority-tiers` for ``seed``."""
    p = params or TierParams()
    rng = np.random.default_rng(seed)
    docs = [
        documents(rng, p.docs_per_tenant, p.doc_min, p.doc_max, p.vocab) for _ in range(p.tenants)
    ]
    probs = zipf_probs(p.docs_per_tenant, p.zipf)
    sessions: list[Session] = []
    t = 0.0
    for _ in range(p.requests):
        t += rng.exponential(1.0 / p.rate)
        tenant = int(rng.integers(0, p.tenants))
        d = int(rng.choice(p.docs_per_tenant, p=probs))
        sessions.append(
            question(rng, t, docs[tenant][d], p, priority=tenant, kind=f"tenant{tenant}")
        )
    per_tenant = [sum(len(d) for d in ds) for ds in docs]
    return SessionWorkload(
        NAME,
        sessions,
        p,
        seed=seed,
        default_pool_tokens=round_pool(p.pool_factor * sum(per_tenant)),
        info={"tenant_doc_tokens": per_tenant},
    )
