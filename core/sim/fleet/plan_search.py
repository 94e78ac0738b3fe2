"""The search over replica counts one capacity-plan setting runs: exponential probe, then bisection.

A probe is one fleet replay at N replicas; it *meets* the SLO when its TTFT
percentile is at most the SLO. The search assumes that adding a replica
never makes the percentile worse (monotone in N), so it probes 1, 2, 4, ...
(capped at the maximum) until one meets, then bisects between the largest
N that failed and the smallest that met: about 2 log2(N) probes. Routers
and caches can break that assumption (a router that spreads a conversation
over more replicas loses its cache hits); :meth:`ReplicaSearch.contradictions`
names every pair of probes whose figures say so, and the plan reports them.

The search is a state machine (``next()`` asks for an N, ``record()`` gives
its figures), so one driver can run the next probe of several settings at
once, and a test can drive it with a fake fleet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Probe", "ReplicaSearch"]


@dataclass(frozen=True)
class Probe:
    """One fleet replay's figures, as the plan reads them."""

    replicas: int
    ttft_ms: float  # the TTFT percentile the SLO is on (over the requests served)
    ttft_p99_ms: float
    hit_rate: float
    gpu_hours: float  # replicas x makespan of the trace / 3600
    requests: int
    refused: int = 0  # requests no replica could hold (no TTFT; listed, not in the percentile)
    # the sweep row it came from or goes to (plan --out: radix_evict.sim.fleet.plan_cells)
    row: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def meets(self, slo_ttft_ms: float) -> bool:
        return self.ttft_ms <= slo_ttft_ms

    def to_json(self) -> dict[str, float | int]:
        return {"replicas": self.replicas, "ttft_ms": self.ttft_ms,
                "ttft_p99_ms": self.ttft_p99_ms, "hit_rate": self.hit_rate,
                "gpu_hours": self.gpu_hours, "requests": self.requests, "refused": self.refused}


class ReplicaSearch:
    """The fewest replicas in ``1..max_replicas`` whose probe meets ``slo_ttft_ms``.

    ``start`` is the first probe (1 unless a lower bound is known). Probes are
    kept by N, so none is run twice.
    """

    def __init__(self, slo_ttft_ms: float, max_replicas: int, start: int = 1) -> None:
        if max_replicas < 1:
            raise ValueError(f"max_replicas must be >= 1, got {max_replicas}")
        if not 1 <= start <= max_replicas:
            raise ValueError(f"start must be in 1..{max_replicas}, got {start}")
        self.slo_ttft_ms = slo_ttft_ms
        self.max_replicas = max_replicas
        self.start = start
        self.probes: dict[int, Probe] = {}
        self._failed = 0  # the largest N that failed (0: none yet)
        self._met: int | None = None  # the smallest N that met

    def next(self) -> int | None:
        """The next N to probe, or None when the search is over."""
        lo, hi = self._failed, self._met
        if hi is None:  # exponential phase: double until one meets or the cap fails
            if lo >= self.max_replicas:
                return None
            return self.start if lo == 0 else min(lo * 2, self.max_replicas)
        if hi - lo <= 1:
            return None
        return (lo + hi) // 2

    def record(self, probe: Probe) -> None:
        """Take the figures of the probe at ``probe.replicas``."""
        n = probe.replicas
        self.probes[n] = probe
        if probe.meets(self.slo_ttft_ms):
            self._met = n if self._met is None else min(self._met, n)
        else:
            self._failed = max(self._failed, n)

    @property
    def done(self) -> bool:
        return self.next() is None

    @property
    def replicas(self) -> int | None:
        """The fewest replicas that meet the SLO (None: none within the maximum)."""
        return self._met if self.done else None

    @property
    def answer(self) -> Probe | None:
        """The probe at :attr:`replicas` (None when none met)."""
        n = self.replicas
        return None if n is None else self.probes[n]

    @property
    def best(self) -> Probe | None:
        """The probe with the lowest TTFT percentile (what was reached when none met)."""
        return min(self.probes.values(), key=lambda p: (p.ttft_ms, p.replicas), default=None)

    def contradictions(self) -> list[tuple[Probe, Probe]]:
        """Pairs (fewer, more replicas) where more replicas gave a higher TTFT percentile:
        against the monotone assumption the search rests on."""
        ordered = sorted(self.probes.values(), key=lambda p: p.replicas)
        out = []
        for i, small in enumerate(ordered):
            for big in ordered[i + 1:]:
                if big.ttft_ms > small.ttft_ms:
                    out.append((small, big))
        return out
