"""The engine loop: requests through the radix cache and the tiny decoder.

Per request: ``match_prefix`` on the prompt less its last token (so at least
one token always runs and yields the first logits, as SGLang does), lock the
prefix, evict if the pool is short, allocate slots for every token whose K/V
will exist (prompt + max_new_tokens - 1: the last generated token is never
fed back), prefill the uncached tail, decode, insert prompt + output[:-1]
(and, like ``radix_evict.sim.replay``, the prompt alone at priority + 1), free
the slots the cache did not take, unlock.

Several requests run at once (``max_running``): each is prefilled on its own
when admitted, and decode steps run them as one batch. Admission is first
come first served: a request that does not fit, or whose session still has a
turn running, waits (and holds back the ones behind it) until running
requests finish.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from radix_evict.cache.device import resolve_device
from radix_evict.engine.model import TinyConfig, TinyDecoder
from radix_evict.engine.result import EngineResult

if TYPE_CHECKING:
    from radix_evict.cache.pool import KVPool
    from radix_evict.cache.radix_cache import RadixCache
    from radix_evict.cache.tree import TreeNode


@dataclass(frozen=True)
class EngineRequest:
    """One request. ``output``, when given, is fed instead of the argmax.

    Requests of one ``session`` run one after another, in list order: a
    conversation's next turn quotes the previous answer, so it cannot start
    before that answer is finished. Forcing the output (teacher forcing)
    keeps a replayed workload's later turns, which quote earlier outputs,
    hitting the cache as they do in the token-only simulation; the model
    still runs every decode step.
    """

    prompt: Sequence[int]
    max_new_tokens: int
    priority: int = 0
    output: Sequence[int] | None = None
    session: int | None = None

    def __post_init__(self) -> None:
        if len(self.prompt) < 1 or self.max_new_tokens < 1:
            raise ValueError("a request needs at least one prompt token and one new token")
        if self.output is not None and len(self.output) != self.max_new_tokens:
            raise ValueError("output must hold exactly max_new_tokens tokens")


@dataclass
class _Running:
    """A request between admission and finish."""

    index: int
    req: EngineRequest
    node: TreeNode | None
    hit: int
    row: Tensor  # slots in token order; row[:hit] came from the cache
    length: int  # tokens whose K/V are in the row
    generated: list[int] = field(default_factory=list)
    logits: list[Tensor] = field(default_factory=list)


class Engine:
    """Runs requests through ``model`` with K/V in ``pool``; ``cache=None`` disables reuse."""

    def __init__(
        self, model: TinyDecoder, pool: KVPool, cache: RadixCache | None = None,
        max_running: int = 4, record_logits: bool = False, split_prompt: bool = True,
    ) -> None:
        if not pool.k_buffer or len(pool.k_buffer) != model.cfg.layers:
            raise ValueError("the pool needs one K/V buffer per model layer")
        self.model, self.pool, self.cache = model, pool, cache
        self.max_running = max_running
        self.record_logits = record_logits
        self.split_prompt = split_prompt
        self.page = pool.page_size
        self._empty = torch.empty(0, dtype=torch.int64, device=pool.device)
        self._sync: Callable[[], None] = (
            torch.cuda.synchronize if pool.device.type == "cuda" else (lambda: None)
        )

    def warmup(self, tokens: int = 32) -> None:
        """Run a throwaway prefill and decode on spare slots, so the first
        measured request does not pay for allocator and kernel start-up."""
        n = min(tokens, self.pool.available_size()) // self.page * self.page
        if n < 2:
            return
        row = self.pool.alloc(n)
        assert row is not None
        dev = row.device
        toks = torch.zeros(n, dtype=torch.int64, device=dev)
        prefill0, decode0 = self.model.prefill_tokens, self.model.decode_tokens
        self.model.prefill(toks[: n - 1], 0, row, self.pool)
        self.model.decode(toks[:1], torch.tensor([n - 1], device=dev), row[n - 1 :],
                          row[None], torch.tensor([n], device=dev), self.pool)
        self._sync()
        self.model.prefill_tokens, self.model.decode_tokens = prefill0, decode0
        self.pool.free(row)

    def run(self, requests: Sequence[EngineRequest]) -> EngineResult:
        """Serve every request; returns counters, measured TTFT and the outputs."""
        res = EngineResult.empty(len(requests), str(self.pool.device), self.cache is not None)
        waiting = deque(range(len(requests)))
        running: list[_Running] = []
        prefill0 = self.model.prefill_tokens
        self._sync()
        t_start = time.perf_counter()
        while waiting or running:
            while waiting and len(running) < self.max_running:
                i = waiting[0]
                sess = requests[i].session
                if sess is not None and any(r.req.session == sess for r in running):
                    break  # its previous turn is still generating
                r = self._admit(i, requests[i], res)
                if r is None:
                    if running:
                        break  # wait for running requests to free slots
                    waiting.popleft()  # can never fit: drop it
                    res.dropped += 1
                    continue
                waiting.popleft()
                running.append(r)
                if len(r.generated) >= r.req.max_new_tokens:
                    running.remove(r)
                    self._finish(r, res)
            if running:
                self._decode_step(running)
                for r in [r for r in running if len(r.generated) >= r.req.max_new_tokens]:
                    running.remove(r)
                    self._finish(r, res)
        self._sync()
        res.wall_seconds = time.perf_counter() - t_start
        res.prefill_tokens = self.model.prefill_tokens - prefill0
        if self.cache is not None:
            res.cache_stats = dict(self.cache.stats.as_dict())
        return res

    # -- steps ----------------------------------------------------------------

    def _ceil_page(self, n: int) -> int:
        return -(-n // self.page) * self.page

    def _admit(self, i: int, req: EngineRequest, res: EngineResult) -> _Running | None:
        """Match, lock, evict, allocate, prefill; None (nothing held) if it does not fit."""
        t0 = time.perf_counter()
        plen = len(req.prompt)
        kv_len = plen + req.max_new_tokens - 1
        hit, node, prefix = 0, None, self._empty
        need = self._ceil_page(kv_len)
        if self.cache is not None:
            c0 = time.perf_counter()
            m = self.cache.match_prefix(list(req.prompt[: plen - 1]))
            hit, node, prefix = m.prefix_len, m.last_node, m.indices
            self.cache.inc_lock_ref(node)
            need = self._ceil_page(kv_len - hit)
            short = need - self.pool.available_size()
            if short > 0:
                self.cache.evict(short)
            res.cache_seconds += time.perf_counter() - c0
        new = self.pool.alloc(need) if need else self._empty
        if new is None:
            if self.cache is not None:
                assert node is not None
                self.cache.dec_lock_ref(node)
            return None
        row = torch.cat([prefix.to(new.device), new])
        tail = torch.tensor(list(req.prompt[hit:]), dtype=torch.int64, device=row.device)
        logits = self.model.prefill(tail, hit, row, self.pool)[-1]
        r = _Running(index=i, req=req, node=node, hit=hit, row=row, length=plen)
        self._emit(r, logits)
        self._sync()
        res.ttft_ms[i] = (time.perf_counter() - t0) * 1e3
        res.prompt_tokens += plen
        res.cached_tokens += hit
        res.hits[i] = hit
        res.uncached_tokens += plen - hit
        return r

    def _emit(self, r: _Running, logits: Tensor) -> None:
        """Take the next token: the forced one, or the argmax."""
        out = r.req.output
        tok = int(out[len(r.generated)]) if out is not None else int(torch.argmax(logits))
        r.generated.append(tok)
        if self.record_logits:
            r.logits.append(logits.detach().cpu())

    def _decode_step(self, running: list[_Running]) -> None:
        """Feed each request's last token at its next position, as one batch."""
        dev = running[0].row.device
        lens = [r.length + 1 for r in running]
        width = max(lens)
        # Pad each context with its own newest slot (written this step), so a
        # pad never reads a slot the request does not own; the mask hides it.
        ctx = torch.stack([
            torch.cat([r.row[:n], r.row[n - 1 : n].expand(width - n)])
            for r, n in zip(running, lens, strict=True)
        ])
        tokens = torch.tensor([r.generated[-1] for r in running], dtype=torch.int64, device=dev)
        positions = torch.tensor([r.length for r in running], dtype=torch.int64, device=dev)
        slots = torch.stack([r.row[r.length] for r in running])
        logits = self.model.decode(
            tokens, positions, slots, ctx, torch.tensor(lens, device=dev), self.pool
        )
        for b, r in enumerate(running):
            r.length += 1
            self._emit(r, logits[b])

    def _finish(self, r: _Running, res: EngineResult) -> None:
        """Insert the tokens whose K/V exist, free the rest of the row, unlock."""
        res.generated[r.index] = list(r.generated)
        res.decode_tokens += r.length - len(r.req.prompt)
        if self.record_logits:
            res.logits[r.index] = torch.stack(r.logits)
        if self.cache is None:
            self.pool.free(r.row)
            return
        c0 = time.perf_counter()
        tokens = list(r.req.prompt) + r.generated[:-1]
        assert len(tokens) == r.length
        aligned = r.length // self.page * self.page
        if aligned:
            self.cache.insert(
                tokens[:aligned], r.row[:aligned], priority=r.req.priority, prev_prefix_len=r.hit
            )
        plen = len(r.req.prompt) // self.page * self.page
        if self.split_prompt and 0 < plen < aligned:
            # SGLang's prompt-boundary split (as in radix_evict.sim.replay): the
            # prompt part gets priority + 1 and a node boundary of its own.
            self.cache.insert(tokens[:plen], r.row[:plen], priority=r.req.priority + 1,
                              prev_prefix_len=plen, inserted_len=plen)
        if r.row.numel() > aligned:
            self.pool.free(r.row[aligned:])
        assert r.node is not None
        self.cache.dec_lock_ref(r.node)
        res.cache_seconds += time.perf_counter() - c0


def build_engine(
    policy: Any = None, config: Any = None, *, pool_tokens: int = 4096,
    page_size: int = 1, device: str | torch.device | None = None, use_cache: bool = True,
    seed: int = 0,
    model_config: TinyConfig | None = None, dtype: torch.dtype = torch.float32,
    max_running: int = 4, record_logits: bool = False, split_prompt: bool = True,
    pool_factory: Callable[..., KVPool] | None = None,
) -> Engine:
    """A seeded model, a pool sized for it and, unless ``use_cache`` is off, a cache.

    ``pool_factory`` (KVPool's signature) lets a test pass a pool subclass,
    for instance one that poisons freed slots. ``policy`` None is the cache's own default
    (the engine names no policy: the caller chooses).
    """
    from radix_evict.cache.pool import KVPool
    from radix_evict.cache.radix_cache import RadixCache

    dev = resolve_device(device)
    model = TinyDecoder(model_config, seed=seed).to(device=dev, dtype=dtype)
    cfg = model.cfg
    make = pool_factory or KVPool
    pool = make(pool_tokens, page_size=page_size, device=dev, layers=cfg.layers,
                heads=cfg.heads, head_dim=cfg.head_dim, dtype=dtype)
    chosen = {} if policy is None else {"policy": policy}
    cache = RadixCache(pool, **chosen, policy_config=config) if use_cache else None
    return Engine(model, pool, cache, max_running=max_running, record_logits=record_logits,
                  split_prompt=split_prompt)


def run_engine_replay(
    requests: Sequence[EngineRequest], policy: Any = None, config: Any = None, *,
    pool_tokens: int = 4096, page_size: int = 1, device: str | torch.device | None = None,
    use_cache: bool = True, seed: int = 0, model_config: TinyConfig | None = None,
    dtype: torch.dtype = torch.float32, max_running: int = 4, record_logits: bool = False,
    split_prompt: bool = True, warmup: bool = True, cpu_threads: int | None = 1,
) -> EngineResult:
    """Replay ``requests`` through a fresh engine; the CLI's ``--model tiny`` entry point.

    ``policy``: a built policy object (what :mod:`radix_evict.engine.compare` passes, from
    each run's validated config), or a registered name with ``config``.

    On cpu the run uses ``cpu_threads`` torch threads (restored afterwards;
    None leaves torch's setting): the tiny model is mostly per-op overhead,
    and extra threads only add contention and timing noise.
    """
    dev = resolve_device(device)
    if cpu_threads is not None and dev.type == "cpu":
        before = torch.get_num_threads()
        torch.set_num_threads(cpu_threads)
        try:
            return run_engine_replay(
                requests, policy, config, pool_tokens=pool_tokens, page_size=page_size,
                device=device, use_cache=use_cache, seed=seed, model_config=model_config,
                dtype=dtype, max_running=max_running, record_logits=record_logits,
                split_prompt=split_prompt, warmup=warmup, cpu_threads=None,
            )
        finally:
            torch.set_num_threads(before)
    engine = build_engine(
        policy, config, pool_tokens=pool_tokens, page_size=page_size, device=device,
        use_cache=use_cache, seed=seed, model_config=model_config, dtype=dtype,
        max_running=max_running, record_logits=record_logits, split_prompt=split_prompt,
    )
    if warmup:
        engine.warmup()
    res = engine.run(requests)
    res.policy = getattr(policy, "name", policy) if use_cache else "no-cache"
    return res
