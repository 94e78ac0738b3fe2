"""Decode: the running batch, its segments of steps, and retraction when memory runs out.

The running requests decode together in *segments*: ``k`` steps at once,
costed in closed form, ending where the schedule can change (the next
finish, the next admissible arrival, or the step where the pool runs dry).
Lengths are ``step + offset`` and finishes sit in a heap by step, so a
segment is O(1) in Python calls. When the next step does not fit even after
eviction, requests are retracted by SGLang's rules and go back to the queue.
"""

from __future__ import annotations

import heapq
import math

import torch

from radix_evict.sim.timed.finish import Finishing
from radix_evict.sim.timed.job import Job
from radix_evict.sim.timed.scheduler import CLIP_MAX_NEW_TOKENS, RETRACT_DECODE_STEPS

__all__ = ["Decoding"]


class Decoding(Finishing):
    """The decode batch: joining, leaving, running segments, retracting (over
    :class:`Finishing`: a segment finishes the requests that reach their end in it)."""

    def _join_decode(self, job: Job) -> None:
        length = job.plen + job.generated
        slot = len(self.running)
        self.running.append(job)
        job.slot = slot
        job.offset = length - self.step
        self.offsets[slot] = job.offset
        self.sum_offset += job.offset
        left = job.olen - job.generated
        self.remaining_out += left
        job.long = left > CLIP_MAX_NEW_TOKENS
        self.long_running += job.long
        job.end_step = self.step + left
        self.ends[slot] = job.end_step
        heapq.heappush(self.finishes, (job.end_step, self.seq, job.gen, job))
        self.seq += 1

    def _leave_decode(self, job: Job) -> None:
        job.generated = self.step + job.offset - job.plen
        last = self.running.pop()
        if last is not job:
            self.running[job.slot] = last
            last.slot = job.slot
            self.offsets[job.slot] = last.offset
            self.ends[job.slot] = last.end_step
        self.sum_offset -= job.offset
        self.remaining_out -= job.olen - job.generated
        self.long_running -= job.long
        job.slot = -1

    def _pages_for(self, steps: int) -> int:
        """New slots the running requests need to grow by ``steps`` tokens each."""
        n = len(self.running)
        if self.P == 1:
            return n * steps
        lengths = self.offsets[:n] + self.step
        P = self.P
        return int(((lengths + steps + P - 1) // P - (lengths + P - 1) // P).sum()) * P

    def _decode(self) -> None:
        """Run the running batch up to the next point where the schedule can change."""
        n = len(self.running)
        context = n * self.step + self.sum_offset
        steps = self.finishes[0][0] - self.step
        if not self.blocked and not self.waiting and self.chunked is None:
            t_next = self.arrivals.next_time()  # the next pass may admit it: stop there
            if t_next < math.inf:
                budget_ms = (t_next - self.now) * 1e3
                steps = self.cost.decode_steps_before(n, context, budget_ms, steps)
        need = self._pages_for(steps)
        if not self._make_room(need):
            free = self._free()
            lo, hi = 0, steps  # the most steps that fit: binary search on the page count
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self._pages_for(mid) <= free:
                    lo = mid
                else:
                    hi = mid - 1
            if lo == 0:
                self._retract()
                return
            steps, need = lo, self._pages_for(lo)
        dt = self.cost.decode_ms(n, context, steps)
        copies = self.copies
        if copies is not None and copies.charge_writes:
            write = copies.since_last_step()[1]  # write_back's evictions for this segment
            self.tally.copy_wait_s += write / 1e3
            dt += write
        self._advance(dt / 1e3)
        self.deferred += need
        self.step += steps
        self.remaining_out -= n * steps
        if self.spec.reserve_decode:
            self.ratio = max(self.min_ratio, self.ratio - self.ratio_decay * steps)
        fin = self.finishes
        while fin and fin[0][0] <= self.step:
            _, _, gen, job = heapq.heappop(fin)
            if gen != job.gen or job.slot < 0:
                continue  # retracted since it was queued
            self._leave_decode(job)
            self._finish(job)

    def _retract(self) -> None:
        """The next decode step does not fit even after eviction: retract (SGLang's rules).

        Victims: fewest output tokens first, then the longest prompt. At least
        one goes, then more while one step of the rest does not fit; one always
        stays (alone it fits: larger requests are refused on arrival), unless a
        chunked prefill holds the rest, which then starts over too. Each victim
        is unlocked, its own slots freed (nothing is inserted), and it waits at
        the back of the queue to prefill prompt + output so far. Then eviction
        makes room for RETRACT_DECODE_STEPS steps of the rest, and the
        reservation ratio is re-estimated from them.
        """
        step = self.step
        victims = sorted(self.running, key=lambda j: (step + j.offset - j.plen, -j.plen),
                         reverse=True)
        retracted: list[Job] = []
        while len(self.running) > 1 and (not retracted or not self._make_room(
                self._pages_for(1))):
            job = victims.pop()
            self._leave_decode(job)
            self._release(job)
            retracted.append(job)
        if not self._make_room(self._pages_for(1)) and self.chunked is not None:
            job, self.chunked = self.chunked, None
            self._release(job, decoding=False)
            retracted.append(job)
        if not self._make_room(self._pages_for(1)):
            raise AssertionError("a lone running request cannot grow: slot accounting is off")
        self._make_room(RETRACT_DECODE_STEPS * len(self.running))
        self.retractions += len(retracted)
        # No admission until a request finishes: the retracted would come straight back
        # and starve decode again (SGLang raises its reservation ratio to keep them out;
        # with it off, or a chunked prefill released, only this guarantees progress).
        self.blocked = True
        for job in retracted:
            job.retractions += 1
            self.waiting.append(job)
        if self.spec.reserve_decode and self.running:
            generated = sum(step + j.offset - j.plen for j in self.running)
            wanted = sum(j.olen for j in self.running)
            self.ratio = min(1.0, (generated + RETRACT_DECODE_STEPS * len(self.running))
                             / (wanted + 1))

    def _release(self, job: Job, decoding: bool = True) -> None:
        """Free what a retracted request holds beyond the tree's; it will prefill again.

        A decoding request comes back to prefill prompt + output so far; a
        chunked prefill starts its prompt over.
        """
        buf, held = job.buf, job.held
        assert buf is not None
        if decoding:
            job.target = job.plen + job.generated
            counted = self._pages(job.target) - held
            if counted > 0:
                self.deferred -= counted  # counted for its growth, never taken from the pool
        if held > job.tree_len:
            self.pool.free(torch.from_numpy(buf[job.tree_len:held]))
        self.cache.dec_lock_ref(job.node)
        job.node = job.buf = None
        job.held = 0
        job.gen += 1
        job.prefilled = job.tree_len = 0
