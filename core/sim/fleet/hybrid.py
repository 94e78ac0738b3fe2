"""A fleet of timed servers on a hybrid model's cache (``--replicas`` with ``--model-arch``).

Each replica is the fleet's :class:`~radix_evict.sim.fleet.server.Replica`
on its own :class:`~radix_evict.sim.hybrid_timed.HybridServing` (pools, tree,
adapter and the requests' states of ``spec``), with the same per-component
prefill charge, Mamba running cap and end-of-replay accounting as the
one-server replay (``sim.hybrid_timed``): a fleet of one gives its figures,
whatever the router. A router reads each replica's reusable prefix
(:meth:`HybridRadixCache.peek_prefix`), the prefix a request would reuse
there. The fleet's ``hit_rate`` is the reusable one; ``full_hit_rate`` what
full-attention KV alone covered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.tree import TokenKey
from radix_evict.sim.configs import PolicyRun, RunConfig
from radix_evict.sim.fleet.figures import FleetResult
from radix_evict.sim.fleet.registry import build_router
from radix_evict.sim.fleet.replay import FleetSpec, run_fleet
from radix_evict.sim.fleet.server import Feed, Replica
from radix_evict.sim.hybrid_replay import HybridSpec
from radix_evict.sim.hybrid_timed import HybridServing
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload

__all__ = ["HybridReplica", "check_hybrid_runs", "replay_hybrid_fleet"]


class HybridReplica(Replica):
    """A replica whose cache is a hybrid tree behind ``HybridServerCache``."""

    serving: HybridServing

    def cached_prefix(self, key: TokenKey) -> int:
        """The reusable prefix of ``key`` on its tree, read only (``locate`` on the adapter
        is the checkpoint's, not a lookup)."""
        return self.serving.cache.peek_prefix(key)


class _HybridReplicas:
    """Each replica a timed server on a fresh hybrid cache of ``spec`` under ``run``'s policy."""

    def __init__(self, workload: Workload, run: PolicyRun, spec: HybridSpec,
                 timing: TimingSpec, host: HostTierSpec | None) -> None:
        self.workload, self.run, self.spec, self.timing = workload, run, spec, timing
        self.host = host  # each replica's own host tier (None: none)
        self.serving: list[HybridServing] = []
        self.run_config = RunConfig(run.config, "given" if run.config is not None else "none")
        self.pool_size, self.page_size = spec.pools.full_tokens, spec.page_size

    def replica(self, index: int, feed: Feed) -> Replica:
        h = HybridServing(self.spec, self.run.policy, self.run.config, self.host)
        self.serving.append(h)
        wl, timing = self.workload, self.timing
        r = HybridReplica(h.seam, h.pool, self.page_size, timing.cost_model,  # type: ignore[arg-type]
                          feed, timing.scheduler, Tally(wl.num_requests, 0, False),
                          split_prompt=h.split_prompt, contexts=h.context, workload=wl.name)
        r.serving = h
        h.adjust(r)
        return r

    def check(self, index: int) -> None:
        self.serving[index].check()

    def full_hit_tokens(self) -> int | None:
        return sum(h.full_hit_tokens() for h in self.serving)


def replay_hybrid_fleet(workload: Workload, run: PolicyRun, spec: HybridSpec, *,
                        timing: TimingSpec, fleet: FleetSpec, host: HostTierSpec | None = None,
                        progress: Callable[[int, int], None] | None = None) -> FleetResult:
    """Replay ``workload`` on ``fleet.replicas`` timed servers, each on a hybrid cache of
    ``spec`` (its KV memory per replica) with ``host`` (a host tier each), behind
    ``fleet.router``.

    Errors as :func:`~radix_evict.sim.fleet.replay.replay_fleet`'s; RuntimeError if a
    replica's hybrid accounting does not close (``hybrid_timed``'s check).
    """
    router = build_router(fleet.router, fleet.router_config, replicas=fleet.replicas,
                          seed=fleet.seed)
    started = time.perf_counter(), time.thread_time()
    return run_fleet(workload, run, _HybridReplicas(workload, run, spec, timing, host),
                     timing=timing, fleet=fleet, router=router, progress=progress,
                     started=started)


def check_hybrid_runs(runs: Sequence[PolicyRun], spec: HybridSpec) -> None:
    """Each policy builds a hybrid cache of ``spec`` (ValueError naming it if not, e.g. one
    reading node fields the hybrid tree does not keep): before any replica is replayed."""
    for run in runs:
        HybridServing(spec, run.policy, run.config)
