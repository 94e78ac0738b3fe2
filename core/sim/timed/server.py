"""A continuous-batching server in virtual time, on the same cache, pool and policies.

The replay is event-driven: it never steps one decode token at a time. A
decode *segment* runs every running request for ``k`` steps at once (the
cost model sums the steps in closed form), and a segment ends where
something can change: the next finish, the next arrival that could be
admitted, or the step where the pool runs dry. So a request costs a few
cache operations and O(1) arithmetic, whatever its output length.

The scheduler follows SGLang 0.5.23 (``docs/replay.md`` says what is and is
not modelled):

- a loop iteration runs a prefill batch when a waiting request can be
  admitted (or a chunked prefill is unfinished), else a decode step of all
  running requests;
- admission is first come first served: the head of the queue is admitted
  while fewer than ``max_running`` requests run and the pool (free slots plus
  evictable cache, less what running requests are expected to still decode,
  SGLang's ``new_token_ratio`` reservation) holds its uncached prompt tokens
  and its expected output; a head that does not fit holds back the queue,
  and no admission is tried again until a running request leaves;
- a prompt longer than the chunk budget is prefilled in chunks of
  ``chunked_prefill_size`` tokens, one chunked request at a time;
- after each prefill (chunk) the computed prompt is inserted into the tree
  and stays locked (``cache_unfinished_req``, in 0.5.23 ``checkpoint_kv_cache``):
  others can hit it while it decodes; at finish prompt and output are inserted
  and unlocked (``cache_finished_req``);
- decode grows each request one token a step, a page at a time; when the
  pool cannot hold the next steps even after eviction, requests are retracted
  (fewest output tokens first, then the longest prompt), their KV freed, and
  they wait at the back of the queue to prefill prompt and output so far.

Decode slots are counted when a request grows and allocated from the pool
when it finishes or is retracted (``deferred``): slot numbers never reach a
policy, so this changes no decision, and it keeps a decode segment O(1) in
Python calls instead of one allocation per request per segment.

Each job has a module, and :class:`Server` combines them (its ``run`` is the
loop): ``scheduler`` (the knobs and SGLang's constants), ``job`` (a request
in the server, and its record), ``state`` (the server's state, its clock,
memory and record keeping), ``admission`` (the queue, matching, forming a
prefill batch), ``prefill`` (a batch's compute and checkpoints), ``decode``
(decode segments and retraction), ``finish`` (a request leaving) and
``host_copies`` (what a host tier's copies cost).
"""

from __future__ import annotations

import math

from radix_evict.sim.timed.admission import Admission
from radix_evict.sim.timed.job import JobRecord
from radix_evict.sim.timed.prefill import Prefilling
from radix_evict.sim.timed.scheduler import CHECKPOINT_TOKENS as CHECKPOINT_TOKENS
from radix_evict.sim.timed.scheduler import CLIP_MAX_NEW_TOKENS as CLIP_MAX_NEW_TOKENS
from radix_evict.sim.timed.scheduler import INIT_NEW_TOKEN_RATIO, SchedulerSpec
from radix_evict.sim.timed.scheduler import MAX_RUNNING_CAP as MAX_RUNNING_CAP
from radix_evict.sim.timed.scheduler import (
    MIN_NEW_TOKEN_RATIO_FACTOR as MIN_NEW_TOKEN_RATIO_FACTOR,
)
from radix_evict.sim.timed.scheduler import (
    NEW_TOKEN_RATIO_DECAY_STEPS as NEW_TOKEN_RATIO_DECAY_STEPS,
)
from radix_evict.sim.timed.scheduler import RETRACT_DECODE_STEPS as RETRACT_DECODE_STEPS

__all__ = ["JobRecord", "SchedulerSpec", "Server"]


class Server(Admission, Prefilling):
    """Serve ``arrivals`` on ``cache``/``pool``; :meth:`run` returns every request's record.

    Built from :class:`~radix_evict.sim.timed.state.ServerState`'s arguments (cache,
    pool, page size, cost model, arrivals, scheduler spec, tally, the replay's hooks);
    its steps come from the job modules listed above.
    """

    def run(self) -> list[JobRecord]:
        """Serve until every request has finished or been refused."""
        arrivals = self.arrivals
        while True:
            self._absorb_arrivals()
            if self.chunked is not None or (self.waiting and not self.blocked):
                batch = self._form_prefill_batch()
                if batch:
                    self._prefill(batch)
                    continue
                if not self.running:
                    raise AssertionError("the queue's head cannot be admitted to an idle server")
            if self.running:
                self._decode()
                continue
            t_next = arrivals.next_time()
            if t_next == math.inf:
                break
            self.now = max(self.now, t_next)
            self.ratio = INIT_NEW_TOKEN_RATIO  # SGLang resets it when fully idle
        self.tally.flush(self.now)
        if self.progress is not None:
            self.progress(len(self.records), self.total)
        return self.records
