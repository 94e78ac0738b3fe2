"""Prefill: one batch's compute time, and each prompt's checkpoint into the tree.

A prefill batch computes each member's chunk (the cost model's time, with a
host tier's load-backs hidden under it layer by layer and write_back's
writes added), inserts what it computed so other requests can hit it, and
hands each finished prompt its first token: on to decode (``decode.py``),
or to finish (``finish.py``) when that was its only token. Chunks are cut by
admission (``admission.py``).
"""

from __future__ import annotations

import torch

from radix_evict.sim.timed.decode import Decoding
from radix_evict.sim.timed.job import Job
from radix_evict.sim.timed.scheduler import CHECKPOINT_TOKENS

__all__ = ["Prefilling"]


class Prefilling(Decoding):
    """Running a prefill batch and checkpointing its prompts (over :class:`Decoding`: a
    finished prompt joins the decode batch, or finishes)."""

    def _prefill(self, batch: list[Job]) -> None:
        """Run one prefill batch; finished prompts emit their first token and start decoding."""
        new = sum(j.chunk for j in batch)
        pairs = sum(self.pairs(j.prefilled, j.chunk) for j in batch)
        cached = sum(j.prefilled for j in batch)
        compute = self.cost.prefill_ms(new, pairs, cached)
        copies = self.copies
        if copies is None:
            self._advance(compute / 1e3)
        else:
            load, write = copies.since_last_step()
            step = max(compute, load) + write  # layer by layer, the load hides under compute
            self.tally.copy_wait_s += (step - compute) / 1e3
            self._advance(step / 1e3)
        for job in batch:
            job.prefilled += job.chunk
            job.chunk = 0
            self._cache_unfinished(job)
            if job.prefilled < job.target:
                continue  # chunked: more to come
            job.generated += 1
            if job.first_token < 0:
                job.first_token = self.now
            # the first output token's page (past a page-aligned prompt) is counted now and
            # made room for by the next decode segment, or taken at finish
            # (a zero-length answer ends with its prefill: no page to count)
            self.deferred += max(0, self._pages(job.plen + min(job.generated, job.olen))
                                 - job.held)
            if job.generated >= job.olen:
                self._finish(job)
            else:
                self._join_decode(job)

    def _cache_unfinished(self, job: Job) -> None:
        """Insert the computed prefix so others can hit it; move this request's lock onto it.

        SGLang 0.5.23's ``checkpoint_kv_cache`` on its default (unified) tree: the
        insert, then the node it ended on, read without counting a use (the legacy
        tree's re-match would stamp the path a second time). A retracted request
        prefilling prompt + output again gets the same prompt-boundary insert at
        priority + 1 as a finish.
        """
        aligned = job.prefilled // self.P * self.P
        if aligned <= job.tree_len or (
                job.prefilled < job.target and aligned - job.tree_len < CHECKPOINT_TOKENS):
            return  # nothing new, or a sliver of a chunk: it waits for the next checkpoint
        cache, buf = self.cache, job.buf
        assert buf is not None
        key = job.full[:aligned]
        trow = torch.from_numpy(buf)
        prio = job.req.priority
        cache.insert(key, trow[:aligned], priority=prio, prev_prefix_len=job.tree_len,
                     context=job.ctx)
        Lp = job.plen // self.P * self.P
        if self.split_prompt and 0 < Lp < aligned:
            cache.insert(job.full[:Lp], trow[:Lp], priority=prio + 1, prev_prefix_len=Lp,
                         inserted_len=Lp, context=job.ctx)
        length, node = cache.locate(key)
        assert length == aligned  # the insert made the whole path
        cache.inc_lock_ref(node)
        cache.dec_lock_ref(job.node)
        job.node = node
        # buf[:aligned] is the tree's now (duplicates it held are freed, their numbers stale):
        # nothing reads it again, every later call passes prev_prefix_len = tree_len
        job.tree_len = aligned
