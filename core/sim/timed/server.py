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
when it finishes or is retracted (``_deferred``): slot numbers never reach a
policy, so this changes no decision, and it keeps a decode segment O(1) in
Python calls instead of one allocation per request per segment.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from radix_evict.cache.allocator import Allocator
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.sim.tally import Tally
from radix_evict.sim.timed.arrivals import Arrivals
from radix_evict.sim.timed.cost import CostModel, attention_pairs
from radix_evict.sim.timed.limits import check_chunk, check_prompt
from radix_evict.sim.workloads import Request

__all__ = ["JobRecord", "SchedulerSpec", "Server"]

# SGLang 0.5.23's constants (docs/replay.md says where each comes from).
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
CLIP_MAX_NEW_TOKENS = 4096
RETRACT_DECODE_STEPS = 20
MAX_RUNNING_CAP = 2048  # the default max_running_requests for a long-context model
# A chunk's checkpoint insert walks the request's whole path, one node per earlier
# checkpoint: with tiny chunks (--chunked-prefill-size 1) a prompt's checkpoints cost
# O(chunks^2). Unfinished prompts are checkpointed only every this many tokens (the last
# chunk always is), so a prompt costs O(prompt / CHECKPOINT_TOKENS) walks at most; chunks
# this size or larger checkpoint exactly as SGLang does.
CHECKPOINT_TOKENS = 256


@dataclass(frozen=True)
class SchedulerSpec:
    """The server's knobs (SGLang's names and, where it has one, its default)."""

    max_running: int | None = None  # None: SGLang's default, min(2048, pool tokens / 2)
    chunked_prefill_size: int = 8192  # 0: no chunking
    max_prefill_tokens: int = 16384
    reserve_decode: bool = True  # SGLang's new_token_ratio reservation for running requests

    def __post_init__(self) -> None:
        if self.max_running is not None and self.max_running < 1:
            raise ValueError(f"max_running must be >= 1, got {self.max_running!r}")
        if self.max_prefill_tokens < 1:
            raise ValueError(f"max_prefill_tokens must be >= 1, got {self.max_prefill_tokens!r}")
        if self.chunked_prefill_size < 0:
            raise ValueError(f"chunked_prefill_size must be >= 0, got "
                             f"{self.chunked_prefill_size!r}")

    def running_limit(self, pool_tokens: int) -> int:
        """``max_running``, or SGLang's default for a pool of ``pool_tokens``."""
        if self.max_running is not None:
            return self.max_running
        return max(1, min(MAX_RUNNING_CAP, pool_tokens // 2))

    def describe(self) -> dict[str, Any]:
        return {"max_running": self.max_running,
                "chunked_prefill_size": self.chunked_prefill_size,
                "max_prefill_tokens": self.max_prefill_tokens,
                "reserve_decode": self.reserve_decode}


@dataclass(frozen=True)
class JobRecord:
    """One request's times (seconds of virtual time); ``refused`` says why it never ran."""

    rid: str
    arrival: float
    admitted: float
    first_token: float
    finish: float
    output_tokens: int
    hit_tokens: int
    prompt_tokens: int
    retractions: int
    refused: str | None = None

    @property
    def ttft(self) -> float:
        return self.first_token - self.arrival

    @property
    def queue(self) -> float:
        return self.admitted - self.arrival

    @property
    def e2e(self) -> float:
        return self.finish - self.arrival

    @property
    def tpot(self) -> float | None:
        """Time per output token after the first; None for a one-token answer."""
        if self.output_tokens < 2:
            return None
        return (self.finish - self.first_token) / (self.output_tokens - 1)


class _Job:
    """A request between arrival and finish."""

    __slots__ = (
        "admitted",
        "arrival",
        "buf",
        "chunk",
        "ctx",
        "device_len",
        "end_step",
        "first_token",
        "full",
        "gen",
        "generated",
        "held",
        "hit",
        "long",
        "node",
        "offset",
        "olen",
        "plen",
        "prefilled",
        "req",
        "retractions",
        "slot",
        "target",
        "tree_len",
    )

    def __init__(self, req: Request, arrival: float) -> None:
        self.req = req
        self.arrival = arrival
        self.full = req.tokens()
        self.plen = len(req.prompt)
        self.olen = len(self.full) - self.plen
        self.admitted = -1.0
        self.first_token = -1.0
        self.hit = -1  # prompt tokens matched at first admission (-1: not yet admitted)
        self.generated = 0
        self.target = self.plen  # tokens to prefill: the prompt (+ output so far, if retracted)
        self.prefilled = 0
        self.tree_len = 0  # buf[:tree_len] is the tree's (matched or inserted), locked by node;
        # after a checkpoint those entries may name duplicates the tree freed: never read
        self.node: Any = None
        # the slots of the tokens it holds: buf[:held]; buf has room for the whole request, so
        # a chunk or a page of growth is written in place instead of joining arrays
        self.buf: np.ndarray | None = None
        self.held = 0
        self.offset = 0  # while decoding: length = step + offset
        self.end_step = 0
        self.slot = -1  # index in the server's running arrays
        self.retractions = 0
        self.chunk = 0  # tokens this prefill batch computes for it
        self.gen = 0  # bumped on retraction: stale heap entries are skipped
        self.long = False  # joined the decode batch with more than the clip to go
        self.ctx: Any = None  # its RequestContext, when the policy reads them
        self.device_len = 0  # of tree_len at its match, the part found on device (host tier)


class Server:
    """Serve ``arrivals`` on ``cache``/``pool``; :meth:`run` returns every request's record."""

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
        self.split_prompt = split_prompt
        self.now = 0.0
        self.waiting: deque[_Job] = deque()
        self.chunked: _Job | None = None
        self.records: list[JobRecord] = []
        self.retractions = 0
        self.peak_queue = 0
        self.busy_s = 0.0  # virtual seconds the server was computing
        self.in_system = 0  # requests queued, prefilling or decoding
        self.in_system_s = 0.0  # its integral over virtual time (Little's L times the span)
        self.t_evict = 0.0  # CPU seconds inside evict (the whole run is timed by the caller)
        # decode batch: lengths are step + offset; finishes in a heap by step
        self.step = 0
        self.running: list[_Job] = []
        self.max_running = spec.running_limit(self.pool_size)
        self.offsets = np.zeros(self.max_running, dtype=np.int64)
        self.ends = np.zeros(self.max_running, dtype=np.int64)  # the step each one finishes at
        self.blocked = False  # SGLang's batch_is_full: no admission until a request leaves
        self.sum_offset = 0
        self.remaining_out = 0  # sum over running of tokens still to decode
        self.long_running = 0  # running requests that joined with more than the clip to go
        self.finishes: list[tuple[int, int, int, _Job]] = []  # end step, seq, gen, job
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
        # A host tier's copies (docs/hicache.md): load-backs overlap the next prefill layer by
        # layer; write_back's writes block the eviction that makes them (write-through's go
        # on a side stream, off the critical path). Counted in tokens since the last step.
        host = cache.host_tier
        self.host = host
        self.charge_writes = host is not None and host.write_back
        self.loaded_seen = self.written_seen = 0
        if host is not None:
            cost.transfer_ms(0)  # a cost model without a [transfer] table fails here, named

    # -- memory -------------------------------------------------------------------

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

    def _copies_ms(self) -> tuple[float, float]:
        """(load-back ms, blocking write ms) of the host copies since the last step."""
        host = self.host
        assert host is not None
        st = host.stats
        loads = st.loaded_tokens - self.loaded_seen
        self.loaded_seen = st.loaded_tokens
        writes = 0
        if self.charge_writes:
            writes = st.written_tokens - self.written_seen
            self.written_seen = st.written_tokens
        return self.cost.transfer_ms(loads), self.cost.transfer_ms(writes)

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

    # -- admission and prefill ------------------------------------------------------

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

    def _refuse(self, job: _Job, why: str) -> None:
        self.tally.record(job.req, job.plen, 0, self.now, admitted=False)
        self._record(JobRecord(job.req.rid, job.arrival, math.nan, math.nan, self.now,
                               0, 0, job.plen, 0, refused=why), job.req)

    def _absorb_arrivals(self) -> None:
        """Queue every request that has arrived by now; refuse one the pool can never hold."""
        arrivals, now = self.arrivals, self.now
        while arrivals.next_time() <= now:
            t = arrivals.next_time()
            job = _Job(arrivals.pop(), t)
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

    def _match(self, job: _Job) -> None:
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

    def _unmatch(self, job: _Job) -> None:
        self.cache.dec_lock_ref(job.node)
        job.node = job.buf = None
        job.held = 0

    def _plan_chunk(self, job: _Job, chunk_budget: int) -> int:
        """Tokens ``job`` prefills in this batch: all that is left, or a page-aligned chunk."""
        todo = job.target - job.prefilled
        if chunk_budget and todo > chunk_budget:
            return chunk_budget // self.P * self.P
        return todo

    def _reservation(self, job: _Job, chunk: int) -> int:
        """What admitting ``chunk`` of ``job`` takes from the budget (SGLang's ``reserve``)."""
        final = job.prefilled + chunk >= job.target
        out = min(job.olen, CLIP_MAX_NEW_TOKENS) if final and self.spec.reserve_decode else 0
        return self._pages(chunk) + self.P + out

    def _fits(self, job: _Job, chunk: int, budget: float) -> bool:
        """SGLang's check: chunk + expected output + a page, strictly below the budget."""
        final = job.prefilled + chunk >= job.target
        out = (min(max(job.olen - job.generated, 0), CLIP_MAX_NEW_TOKENS)
               if final and self.spec.reserve_decode else 0)
        return chunk + out + self.P < budget

    def _allocate(self, job: _Job, chunk: int) -> bool:
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

    def _form_prefill_batch(self) -> list[_Job]:
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
        batch: list[_Job] = []
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

    def _prefill(self, batch: list[_Job]) -> None:
        """Run one prefill batch; finished prompts emit their first token and start decoding."""
        new = sum(j.chunk for j in batch)
        pairs = sum(attention_pairs(j.prefilled, j.chunk) for j in batch)
        cached = sum(j.prefilled for j in batch)
        compute = self.cost.prefill_ms(new, pairs, cached)
        if self.host is None:
            self._advance(compute / 1e3)
        else:
            load, write = self._copies_ms()
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

    def _cache_unfinished(self, job: _Job) -> None:
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

    # -- decode -----------------------------------------------------------------------

    def _join_decode(self, job: _Job) -> None:
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

    def _leave_decode(self, job: _Job) -> None:
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
        if self.charge_writes:
            write = self._copies_ms()[1]  # write_back evictions made room for this segment
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
        retracted: list[_Job] = []
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

    def _release(self, job: _Job, decoding: bool = True) -> None:
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

    def _finish(self, job: _Job) -> None:
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

    # -- the loop ---------------------------------------------------------------------

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
