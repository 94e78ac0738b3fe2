"""One timed replay on a cache and pool already built (``replay(..., timing=...)`` calls it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from radix_evict.cache.allocator import Allocator
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.arrivals import arrivals_for
from radix_evict.sim.timed.figures import TimedFigures, summarize
from radix_evict.sim.timed.server import Server
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Request, Workload

__all__ = ["serve"]


def serve(workload: Workload, cache: RadixCache, pool: Allocator, page_size: int,
          timing: TimingSpec, tally: Tally, *, split_prompt: bool = True,
          progress: Callable[[int, int], None] | None = None,
          on_admit: Callable[[Request], None] | None = None,
          contexts: Callable[[Request], Any] | None = None,
          adjust: Callable[[Server], None] | None = None,
          ) -> tuple[TimedFigures, tuple[float, float, float]]:
    """Serve ``workload``; its figures and (run CPU s, evict CPU s, wall s).

    Raises ReplayError (from the server's own checks) if a request is left
    neither finished nor refused.
    """
    from radix_evict.sim.replay import ReplayError

    arrivals = arrivals_for(workload, timing.arrivals)
    server = Server(cache, pool, page_size, timing.cost_model, arrivals, timing.scheduler,
                    tally, split_prompt=split_prompt, progress=progress,
                    total=workload.num_requests, on_admit=on_admit, contexts=contexts,
                    workload=workload.name)
    if adjust is not None:  # a hybrid cache's cost and running cap (hybrid_seam.py)
        adjust(server)
    wall0, cpu0 = time.perf_counter(), time.thread_time()
    records = server.run()
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    if len(records) != workload.num_requests or server.in_system or server.deferred:
        raise ReplayError(
            f"timed replay ended with {len(records):,} of {workload.num_requests:,} requests "
            f"accounted for, {server.in_system} still in the system and {server.deferred} "
            "decode slots counted but not returned")
    figures = summarize(records, cost_model=timing.cost_model.name,
                        retractions=server.retractions, peak_queue=server.peak_queue,
                        makespan=server.now, busy=server.busy_s,
                        in_system_s=server.in_system_s, slo_ttft_ms=timing.slo_ttft_ms,
                        slo_tpot_ms=timing.slo_tpot_ms)
    # cache_s: the whole served run's CPU time, scheduler included (the untimed replay times
    # only its cache calls; the timed one's bookkeeping sits between them, call by call)
    return figures, (cpu, server.t_evict, wall)
