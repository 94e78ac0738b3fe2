"""Finishing: a request's prompt and output go into the tree, its lock and tail are released.

SGLang 0.5.23's ``cache_finished_req``: the decode slots counted while the
request grew are taken from the pool, prompt + output are inserted (with
the prompt's own checkpoint at priority + 1), slots beyond the tree's are
freed, the request's lock is dropped, and its :class:`JobRecord` is kept.
"""

from __future__ import annotations

import torch

from radix_evict.sim.timed.job import Job, JobRecord
from radix_evict.sim.timed.state import ServerState

__all__ = ["Finishing"]


class Finishing(ServerState):
    """Finishing a request."""

    def _finish(self, job: Job) -> None:
        """Insert prompt and output (and the prompt checkpoint), free the tail, unlock."""
        cache, P = self.cache, self.P
        buf = job.buf
        assert buf is not None
        total = job.plen + job.olen
        grow = self._pages(total) - job.held
        if grow > 0:  # counted while it grew; taken from the pool now
            self.deferred -= grow
            if self.pool.available_size() < grow:  # a one-token answer's page, never made room
                self._make_room(grow + self.deferred)
            new = self.pool.alloc(grow)
            if new is None:  # nothing left to evict: cache only what has slots
                total = job.held
            else:
                buf[job.held:job.held + grow] = new.numpy()
                job.held += grow
        L = total // P * P
        Lp = job.plen // P * P
        prio = job.req.priority
        trow = torch.from_numpy(buf[:job.held])
        if job.tree_len < L:
            cache.insert(job.full[:L], trow[:L], priority=prio, prev_prefix_len=job.tree_len,
                         context=job.ctx)
        if self.split_prompt and 0 < Lp < L:
            cache.insert(job.full[:Lp], trow[:Lp], priority=prio + 1, prev_prefix_len=Lp,
                         inserted_len=Lp, context=job.ctx)
        keep = max(L, job.tree_len)
        if job.held > keep:
            self.pool.free(trow[keep:])
        cache.dec_lock_ref(job.node)
        job.node = job.buf = None
        job.held = 0
        self.in_system -= 1
        self.blocked = False  # a request left: admission may be tried again
        self._record(JobRecord(job.req.rid, job.arrival, job.admitted, job.first_token,
                               self.now, job.olen, job.hit, job.plen, job.retractions), job.req)
