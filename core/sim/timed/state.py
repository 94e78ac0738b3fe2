"""The timed server's state, and the clock, memory and record keeping every step uses.

:class:`ServerState` holds what the scheduler knows (the queue, the running
batch, the decode step, the slots counted but not yet taken, the clock) and
the few operations each of its jobs needs: whole pages, free slots, eviction
through the policy, advancing the clock, recording a request that leaves.
The jobs themselves are its subclasses, one module each (``server.py`` lists
them); :class:`~radix_evict.sim.timed.server.Server` combines them.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from radix_evict.cache.allocator import Allocator
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.arrivals import Arrivals
from radix_evict.sim.timed.cost import CostModel, attention_pairs
from radix_evict.sim.timed.host_copies import HostCopies
from radix_evict.sim.timed.job import Job, JobRecord
from radix_evict.sim.timed.limits import check_chunk
from radix_evict.sim.timed.scheduler import (
    INIT_NEW_TOKEN_RATIO,
    MIN_NEW_TOKEN_RATIO_FACTOR,
    NEW_TOKEN_RATIO_DECAY_STEPS,
    SchedulerSpec,
)
from radix_evict.sim.workloads import Request

__all__ = ["ServerState"]


class ServerState:
    """A timed server's state (built from the same arguments as :class:`Server`)."""

    def __init__(self, cache: RadixCache, pool: Allocator, page_size: int, cost: CostModel,
                 arrivals: Arrivals, spec: SchedulerSpec, tally: Tally,
                 split_prompt: bool = True,
                 progress: Callable[[int, int], None] | None = None, total: int = 0,
                 on_admit: Callable[[Request], None] | None = None,
                 contexts: Callable[[Request], Any] | None = None,
                 workload: str = "the workload") -> None:
        check_chunk(spec.chunked_prefill_size, page_size)
        self.cache, self.pool, self.P = cache, pool, page_size
        self.workload = workload
        self.pool_size = pool.available_size() + cache.evictable_size()
        self.cost, self.arrivals, self.spec, self.tally = cost, arrivals, spec, tally
        # a prefill's attention pairs (a hybrid model's cache sets its own: hybrid_seam.py)
        self.pairs: Callable[[int, int], float] = attention_pairs
        self.split_prompt = split_prompt
        self.now = 0.0
        self.waiting: deque[Job] = deque()
        self.chunked: Job | None = None
        self.records: list[JobRecord] = []
        self.retractions = 0
        self.peak_queue = 0
        self.busy_s = 0.0  # virtual seconds the server was computing
        self.in_system = 0  # requests queued, prefilling or decoding
        self.in_system_s = 0.0  # its integral over virtual time (Little's L times the span)
        self.t_evict = 0.0  # CPU seconds inside evict (the whole run is timed by the caller)
        # decode batch: lengths are step + offset; finishes in a heap by step
        self.step = 0
        self.running: list[Job] = []
        self.max_running = spec.running_limit(self.pool_size)
        self.offsets = np.zeros(self.max_running, dtype=np.int64)
        self.ends = np.zeros(self.max_running, dtype=np.int64)  # the step each one finishes at
        self.blocked = False  # SGLang's batch_is_full: no admission until a request leaves
        self.sum_offset = 0
        self.remaining_out = 0  # sum over running of tokens still to decode
        self.long_running = 0  # running requests that joined with more than the clip to go
        self.finishes: list[tuple[int, int, int, Job]] = []  # end step, seq, gen, job
        self.seq = 0
        self.deferred = 0  # decode slots counted, not yet taken from the pool
        self.ratio = INIT_NEW_TOKEN_RATIO
        self.min_ratio = INIT_NEW_TOKEN_RATIO * MIN_NEW_TOKEN_RATIO_FACTOR
        self.ratio_decay = (INIT_NEW_TOKEN_RATIO - self.min_ratio) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.progress = progress
        self.on_admit = on_admit
        self.contexts = contexts  # a RequestContext per request, for a policy that reads them
        self.total = total
        self.progress_every = max(1, total // 200)
        # A host tier's copies (host_copies.py): timed at each step, charged by prefill and
        # decode; None without a host tier
        host = cache.host_tier
        self.copies = None if host is None else HostCopies(host, cost)

    def _pages(self, n: int) -> int:
        """Slots that hold ``n`` tokens: whole pages."""
        return -(-n // self.P) * self.P

    def _free(self) -> int:
        """Pool slots no running request has counted yet."""
        return self.pool.available_size() - self.deferred

    def _make_room(self, n: int) -> bool:
        """Evict through the policy until ``n`` slots are free; False if it cannot."""
        short = n - self._free()
        if short > 0:
            t0 = time.thread_time()
            self.tally.evicted += self.cache.evict(short)
            self.t_evict += time.thread_time() - t0
            self.tally.evict_calls += 1
        return self._free() >= n

    def _advance(self, dt: float) -> None:
        """The server computes for ``dt`` seconds."""
        self.now += dt
        self.busy_s += dt
        self.in_system_s += self.in_system * dt

    def _record(self, rec: JobRecord, req: Request) -> None:
        self.records.append(rec)
        if self.progress is not None and len(self.records) % self.progress_every == 0:
            self.progress(len(self.records), self.total)
        self.arrivals.done(req, self.now)
