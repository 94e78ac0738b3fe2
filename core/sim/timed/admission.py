"""Admission: the queue, the match against the cache, and the prefill batch's members.

Arrivals join the queue (or are refused when the pool could never hold
them); the next prefill batch takes the unfinished chunked request first,
then the queue's head while it fits: SGLang 0.5.23's ``PrefillAdder``,
reduced to what decides time and memory. Admitting a request matches and
locks its cached prefix (loading a host-tier match back), plans its chunk
and takes the slots the chunk needs; ``prefill.py`` then computes the batch.
"""

from __future__ import annotations

import math

import numpy as np

from radix_evict.sim.timed.job import Job, JobRecord
from radix_evict.sim.timed.limits import check_prompt
from radix_evict.sim.timed.scheduler import CLIP_MAX_NEW_TOKENS
from radix_evict.sim.timed.state import ServerState

__all__ = ["Admission"]


class Admission(ServerState):
    """Queueing, matching and forming the prefill batch."""

    def _budget(self) -> float:
        """SGLang's ``remaining_total`` before a prefill batch: free slots plus evictable
        cache, less ``min(tokens left, 4096) x new_token_ratio`` for each running request."""
        base = self._free() + self.cache.evictable_size()
        n = len(self.running)
        if not self.spec.reserve_decode or not n:
            return base
        if self.long_running:  # some have more than the clip left: clip each
            left = float(np.minimum(self.ends[:n] - self.step, CLIP_MAX_NEW_TOKENS).sum())
        else:
            left = self.remaining_out
        return base - left * self.ratio

    def _refuse(self, job: Job, why: str) -> None:
        self.tally.record(job.req, job.plen, 0, self.now, admitted=False)
        self._record(JobRecord(job.req.rid, job.arrival, math.nan, math.nan, self.now,
                               0, 0, job.plen, 0, refused=why), job.req)

    def _absorb_arrivals(self) -> None:
        """Queue every request that has arrived by now; refuse one the pool can never hold."""
        arrivals, now = self.arrivals, self.now
        while arrivals.next_time() <= now:
            t = arrivals.next_time()
            job = Job(arrivals.pop(), t)
            if not job.plen:
                check_prompt(job.req.rid, self.workload, job.plen)
            if self.contexts is not None:
                job.ctx = self.contexts(job.req)
            need = self._pages(job.plen + job.olen)
            if need > self.pool_size:
                self._refuse(job, f"needs {need:,} slots (prompt {job.plen:,} + output "
                                  f"{job.olen:,} tokens, page-rounded), the pool holds "
                                  f"{self.pool_size:,}")
                continue
            self.waiting.append(job)
            self.in_system += 1
            self.in_system_s += now - t  # it waited unseen since it arrived mid-step
        if len(self.waiting) > self.peak_queue:
            self.peak_queue = len(self.waiting)

    def _match(self, job: Job) -> None:
        """Match and lock the longest cached prefix of what ``job`` must prefill.

        At most ``target - 1`` tokens, as SGLang: one token is always computed,
        for the logits of the next one.
        """
        m = self.cache.match_prefix(job.full[: max(0, job.target - 1)], job.ctx)
        node, held = m.last_node, m.prefix_len
        buf = np.empty(self._pages(job.plen + job.olen), dtype=np.int64)
        buf[:held] = m.indices.numpy()
        job.device_len = held
        if m.host_node is not None:  # on host only: load it back (its copy time: next step)
            loaded = self.cache.load_back(m.host_node)
            if loaded is not None:
                node = m.host_node
                buf[held:held + m.host_len] = loaded.numpy()
                held += m.host_len
        self.cache.inc_lock_ref(node)
        job.node = node
        job.buf, job.held = buf, held
        job.tree_len = job.prefilled = held

    def _unmatch(self, job: Job) -> None:
        self.cache.dec_lock_ref(job.node)
        job.node = job.buf = None
        job.held = 0

    def _plan_chunk(self, job: Job, chunk_budget: int) -> int:
        """Tokens ``job`` prefills in this batch: all that is left, or a page-aligned chunk."""
        todo = job.target - job.prefilled
        if chunk_budget and todo > chunk_budget:
            return chunk_budget // self.P * self.P
        return todo

    def _reservation(self, job: Job, chunk: int) -> int:
        """What admitting ``chunk`` of ``job`` takes from the budget (SGLang's ``reserve``)."""
        final = job.prefilled + chunk >= job.target
        out = min(job.olen, CLIP_MAX_NEW_TOKENS) if final and self.spec.reserve_decode else 0
        return self._pages(chunk) + self.P + out

    def _fits(self, job: Job, chunk: int, budget: float) -> bool:
        """SGLang's check: chunk + expected output + a page, strictly below the budget."""
        final = job.prefilled + chunk >= job.target
        out = (min(max(job.olen - job.generated, 0), CLIP_MAX_NEW_TOKENS)
               if final and self.spec.reserve_decode else 0)
        return chunk + out + self.P < budget

    def _allocate(self, job: Job, chunk: int) -> bool:
        """Take the slots ``job``'s next ``chunk`` tokens need, evicting if short."""
        buf = job.buf
        assert buf is not None
        need = self._pages(job.prefilled + chunk) - job.held
        if need > 0:
            if not self._make_room(need):
                return False
            new = self.pool.alloc(need)
            assert new is not None  # _make_room made the room
            buf[job.held:job.held + need] = new.numpy()
            job.held += need
        job.chunk = chunk
        return True

    def _form_prefill_batch(self) -> list[Job]:
        """SGLang's PrefillAdder, reduced to what decides time and memory (docs/replay.md).

        The unfinished chunked request goes first; then the queue in order,
        while the batch has request slots, token budgets and memory. The first
        request that does not fit ends the pass, and if anything is running it
        blocks admission until a running request leaves.
        """
        spec = self.spec
        chunk_budget = spec.chunked_prefill_size
        input_budget = spec.max_prefill_tokens
        budget = self._budget()
        batch: list[Job] = []
        if self.chunked is not None:
            job = self.chunked
            chunk = self._plan_chunk(job, chunk_budget)
            # its next chunk may not take what running requests are expected to decode:
            # they go first, and their finishes free the room
            if chunk <= 0 or (self.running and not self._fits(job, chunk, budget)) or (
                    not self._allocate(job, chunk)):
                return []
            self.chunked = None
            batch.append(job)
            budget -= self._reservation(job, chunk)
            input_budget -= chunk
            chunk_budget -= self._pages(chunk) if chunk_budget else 0
            if job.prefilled + chunk < job.target:
                self.chunked = job
                return batch
        elif self.blocked:
            return []
        while self.waiting:
            if (spec.chunked_prefill_size and chunk_budget <= 0) or input_budget <= 0:
                break  # this batch is full; the next pass goes on
            if len(self.running) + len(batch) >= self.max_running:
                self.blocked = True
                break
            job = self.waiting[0]
            first = job.hit < 0
            if first and self.on_admit is not None:
                self.on_admit(job.req)
            self._match(job)
            chunk = self._plan_chunk(job, chunk_budget)
            idle = not self.running and not batch
            # An idle server always takes its head (it fits the pool: larger ones are
            # refused on arrival); SGLang would wait forever on one within a page of it.
            if chunk <= 0 or (not idle and not self._fits(job, chunk, budget)) or (
                    not self._allocate(job, chunk)):
                self._unmatch(job)
                if self.running or batch:
                    self.blocked = True
                break
            self.waiting.popleft()
            if first:
                job.hit = min(job.tree_len, job.plen)
                self.tally.host_hits += job.hit - min(job.device_len, job.hit)
                job.admitted = self.now
                self.tally.record(job.req, job.plen, job.hit, self.now, admitted=True)
            batch.append(job)
            budget -= self._reservation(job, chunk)
            input_budget -= chunk
            chunk_budget -= self._pages(chunk) if chunk_budget else 0
            if job.prefilled + chunk < job.target:
                self.chunked = job  # one chunked request at a time; it goes first next time
                break
        return batch
