"""SGLang 0.5.23's unified tree with its SWA or Mamba component on CPU, against radix-evict's.

Both sides replay the same request stream (``sglang_rig.chat_events``) with the
same operations, and after every event each side reports what it decided
(:class:`Step`): every operation's result (match: reusable prefix, full-KV hit
length and branching point; evict: asked and freed per component; alloc success;
checkpoint and insert: prefix length, and whether a branch was inserted or a state
was there) and the pools and the tree's ledgers per component (free, evictable,
protected): every free shows up there.

SGLang's side is its real code: ``UnifiedRadixCache`` (its Python or Rust tree
core) with ``FullComponent`` + ``SWAComponent`` over its real
``SWATokenToKVPoolAllocator`` (CPU tensors, a KV pool of one head of size one), or
``FullComponent`` + ``MambaComponent`` over its real ``HybridReqToTokenPool`` and
Mamba allocator. Nothing is stubbed beyond what ``sglang_env`` stubs for the import.

The operations per request (page size P, window W), as SGLang's scheduler makes them:

    arrive:  m = match(prompt); lock(m.node)
             need = round_up(len(prompt) + len(output) - hit, P)
             evict the shortfalls (full: need - free; window: need - free; Mamba: 1 - free)
             alloc need full (+ window) slots and one Mamba state; on failure unlock, count it
             checkpoint after prefill (checkpoint_into_tree):
               window: free own window KV behind the window, insert the prompt (or up
                       to the match's branching point), move the lock to its end
               Mamba:  a state slot for the tree (evict one if none is free), insert the
                       prompt to its tracked point with it, move the lock
    finish:  window: free the window KV decode left behind (common.py:75-140)
             insert(prompt + output, cut to pages (Mamba: to its last state),
                    prev_prefix_len = what the tree owns, inserted_len = what it
                    inserted, window floor, state)
             free what the tree did not take; unlock
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from helpers.sglang_rig import Request

KINDS = ("swa", "mamba")


@dataclass
class Step:
    """What one side decided at one event."""

    ops: list[tuple[Any, ...]] = field(default_factory=list)
    ledger: tuple[int, ...] = ()


def ceil_page(n: int, page: int) -> int:
    return -(-n // page) * page


def free_out(evicted: int, protected: int, pre_len: int, window: int, page: int
             ) -> tuple[int, int]:  # fmt: skip
    """(start, new): the request's window KV it frees itself, ``[start, new)``.

    SGLang's ``free_swa_out_of_window_slots`` (``mem_cache/common.py:75-140``): once
    ``pre_len`` is a window past the floor, free from ``max(floor, protected)`` up to
    ``max(window, page)`` rounded up to pages behind ``pre_len``. The new floor is ``new``.
    """
    if pre_len - window < evicted + 1:
        return evicted, evicted
    start = max(evicted, protected)
    new = max(start, pre_len - ceil_page(max(window, page), page)) // page * page
    return (start, new) if new > start else (start, start)


@dataclass
class Live:
    """A request in flight: its match, lock, row and how much of it the tree owns."""

    hit: int
    node: Any
    lock: Any
    row: Any  # SGLang: its slot indices; radix-evict: how many slots it allocated
    state: Any = None
    protected: int = 0  # the prefix the tree owns (the match, then the checkpoint)
    evicted: int = 0  # its window floor
    inserted: int = 0  # what it inserted itself (SGLang's cache_inserted_len)


def state_len(prompt: int, total: int, page: int, grid: int, interval: int = 256) -> int:
    """Where the request's last saved recurrent state lies: the length its insert keeps.

    Page 1 (no extra buffer): the sequence end (``components/mamba.py:612-626``).
    Otherwise the last tracked point (``mamba_last_track_seqlen``): the prompt's
    last ``grid``-aligned position, or a decode position on the track grid
    (``lcm(grid, mamba_track_interval)``, default interval 256).
    """
    if page == 1:
        return total
    track = math.lcm(grid, interval)
    return max(prompt // grid * grid, total // track * track)


def prefill_state_len(prompt: int, page: int, grid: int) -> int:
    """Where prefill leaves a state to checkpoint: the prompt's end at page 1 (no extra
    buffer), else its last ``grid``-aligned point (``mamba_last_track_seqlen``)."""
    return prompt if page == 1 else prompt // grid * grid


# --------------------------------------------------------------------------- SGLang
class SGLangSide:
    """SGLang's unified tree over its own allocators (CPU, index-only use)."""

    def __init__(self, kind: str, full: int, aux: int, page: int, window: int, policy: str,
                 mamba_grid: int, states_cap: int = -1, backend: str = "python",
                 ) -> None:  # fmt: skip
        from sglang.srt.mem_cache.cache_init_params import CacheInitParams
        from sglang.srt.mem_cache.unified_cache.components.base import ComponentType
        from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
        from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler

        self.kind, self.page, self.window, self.grid = kind, page, window, mamba_grid
        self.CT = ComponentType
        args = ServerArgs(model_path="dummy", page_size=page, mamba_max_states_per_path=states_cap)
        args._mamba_cache_chunk_size = mamba_grid  # what a model config would set
        set_global_server_args_for_scheduler(args)
        if kind == "swa":
            self.alloc, rtp = _swa_allocator(full, aux, page), None
            comps = (ComponentType.FULL, ComponentType.SWA)
        else:
            self.alloc, rtp = _mamba_pools(full, aux, page)
            comps = (ComponentType.FULL, ComponentType.MAMBA)
        self.rtp = rtp
        params = CacheInitParams(
            disable=False, req_to_token_pool=rtp, token_to_kv_pool_allocator=self.alloc,
            page_size=page, sliding_window_size=window if kind == "swa" else None,
            tree_components=comps, tree_core_backend=backend, eviction_policy=policy,
            enable_mamba_extra_buffer=(kind == "mamba" and page > 1),
        )  # fmt: skip
        self.cache = UnifiedRadixCache(params)
        self.live: dict[int, Any] = {}

    def _key(self, tokens: np.ndarray) -> Any:
        from helpers.sglang_rig import radix_key

        return radix_key(tokens)

    def free_counts(self) -> tuple[int, int]:
        if self.kind == "swa":
            return self.alloc.full_available_size(), self.alloc.swa_available_size()
        return self.alloc.available_size(), self.rtp.mamba_allocator.available_size()

    def ledger(self) -> tuple[int, ...]:
        tc, aux = self.cache.tree_core, self.CT.SWA if self.kind == "swa" else self.CT.MAMBA
        return (*self.free_counts(), tc.component_evictable_size(self.CT.FULL),
                tc.component_evictable_size(aux), tc.component_protected_size(self.CT.FULL),
                tc.component_protected_size(aux))  # fmt: skip

    def arrive(self, req: Request, step: Step) -> None:
        from sglang.srt.mem_cache.base_prefix_cache import EvictParams, MatchPrefixParams

        m = self.cache.match_prefix(MatchPrefixParams(key=self._key(req.prompt)))
        hit, node = m.device_prefix_len, m.last_device_node
        branch = m.swa_branching_seqlen if self.kind == "swa" else m.mamba_branching_seqlen
        step.ops.append(("match", hit, m.full_kv_hit_length, branch))
        hit, node = self._host_hit(m, hit, node, step)
        lock = self.cache.inc_lock_ref(node)
        prefix = self.cache.path_device_indices(node)
        need = ceil_page(len(req.prompt) + len(req.out) - hit, self.page)
        free_full, free_aux = self.free_counts()
        aux_need = need if self.kind == "swa" else 1
        short = (max(0, need - free_full), max(0, aux_need - free_aux))
        if short[0] or short[1]:
            p = (EvictParams(num_tokens=short[0], swa_num_tokens=short[1]) if self.kind == "swa"
                 else EvictParams(num_tokens=short[0], mamba_num=short[1]))  # fmt: skip
            r = self.cache.evict(p)
            got = r.swa_num_tokens_evicted if self.kind == "swa" else r.mamba_num_evicted
            step.ops.append(("evict", *short, r.num_tokens_evicted, got))
        free_full, free_aux = self.free_counts()
        if need > free_full or aux_need > free_aux:
            self.cache.dec_lock_ref(node, lock.to_dec_params())
            step.ops.append(("refused",))
            return
        new, state = self._alloc(need)
        live = Live(hit, node, lock, torch.cat([prefix, new]), state, protected=hit)
        self.live[req.rid] = live
        step.ops.append(("admitted", need))
        if self.kind == "swa":
            self._prefill_checkpoint(req, live, m.swa_branching_seqlen, step)
        else:
            self._state_checkpoint(req, live, step)

    def _host_hit(self, m: Any, hit: int, node: Any, step: Step) -> tuple[int, Any]:
        """What the request reuses after the match (a host tier loads back here)."""
        return hit, node

    def _free_out(self, live: Live, pre_len: int) -> None:
        start, new = free_out(live.evicted, live.protected, pre_len, self.window, self.page)
        if new > start:
            self.alloc.free_swa_segment(live.row[start:new], start_pos=start)
        live.evicted = new

    def _state_checkpoint(self, req: Request, live: Live, step: Step) -> None:
        """Mamba: after prefill the tree gets a copy of the state at the prompt's tracked
        point, in a slot of its own (``components/mamba.py:527-554, 604-682``)."""
        from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams

        K = prefill_state_len(len(req.prompt), self.page, self.grid)
        if live.protected >= K:
            return
        slot = self.rtp.mamba_allocator.alloc(1)
        if slot is None:
            r = self.cache.evict(EvictParams(num_tokens=0, mamba_num=1))
            step.ops.append(("evict", 0, 1, r.num_tokens_evicted, r.mamba_num_evicted))
            slot = self.rtp.mamba_allocator.alloc(1)
            if slot is None:
                step.ops.append(("no-state",))
                return
        ip = InsertParams(key=self._key(req.prompt[:K]), value=live.row[:K].clone(),
                          prev_prefix_len=live.protected, priority=req.priority,
                          mamba_value=slot)  # fmt: skip
        r = self.cache.insert(ip)
        step.ops.append(("checkpoint", r.prefix_len, bool(r.mamba_exist)))
        if r.mamba_exist:
            self.rtp.mamba_allocator.free(slot)
        self._move_lock(live, r.last_device_node)

    def _move_lock(self, live: Live, new_node: Any) -> None:
        idx = self.cache.path_device_indices(new_node)
        live.row[live.protected : len(idx)] = idx[live.protected :]
        self.cache.dec_lock_ref(live.node, live.lock.to_dec_params())
        live.node, live.lock = new_node, self.cache.inc_lock_ref(new_node)
        live.protected = live.inserted = len(idx)

    def _prefill_checkpoint(self, req: Request, live: Live, branch: int | None,
                            step: Step) -> None:  # fmt: skip
        """SGLang's checkpoint after prefill (``checkpoint_into_tree``), window models."""
        from sglang.srt.mem_cache.base_prefix_cache import InsertParams

        branch = branch if branch is not None and branch > live.protected else None
        cut = min(len(req.prompt), branch) if branch is not None else len(req.prompt)
        self._free_out(live, cut - 1)
        K = cut // self.page * self.page
        ip = InsertParams(key=self._key(req.prompt[:K]), value=live.row[:K].clone(),
                          prev_prefix_len=live.protected, priority=req.priority,
                          swa_branching_seqlen=branch)  # fmt: skip
        ip.set_evicted_seqlen(self.CT.SWA, live.evicted)
        r = self.cache.insert(ip)
        step.ops.append(("checkpoint", r.prefix_len, bool(r.swa_branch_inserted)))
        self._move_lock(live, r.last_device_node)
        if r.swa_branch_inserted:
            self._free_out(live, len(req.prompt))

    def _alloc(self, need: int) -> tuple[torch.Tensor, Any]:
        if self.kind == "swa":
            full = self.alloc.full_attn_allocator.alloc(need)
            swa = self.alloc.swa_attn_allocator.alloc(need)
            self.alloc.set_full_to_swa_mapping(full, swa)
            return full, None
        full = self.alloc.alloc(need)
        return full, self.rtp.mamba_allocator.alloc(1)

    def finish(self, req: Request, step: Step) -> None:
        from sglang.srt.mem_cache.base_prefix_cache import InsertParams

        live = self.live.pop(req.rid)
        row, state = live.row, live.state
        tokens = np.concatenate([req.prompt, req.out])
        L = len(tokens) // self.page * self.page
        if self.kind == "swa":
            self._free_out(live, len(tokens) - 1)  # what decode freed
        else:
            L = state_len(len(req.prompt), len(tokens), self.page, self.grid)
        ip = InsertParams(key=self._key(tokens[:L]), value=row[:L], priority=req.priority,
                          prev_prefix_len=live.protected, inserted_len=live.inserted,
                          mamba_value=state)  # fmt: skip
        ip.set_evicted_seqlen(self.CT.SWA, live.evicted)
        r = self.cache.insert(ip)
        step.ops.append(("insert", r.prefix_len, bool(r.mamba_exist) and self.kind == "mamba"))
        if self.kind == "mamba" and r.mamba_exist:
            self.rtp.mamba_allocator.free(state)
        if len(row) > max(L, live.protected):
            self.alloc.free(row[max(L, live.protected) :])
        self.cache.dec_lock_ref(live.node, live.lock.to_dec_params())


def _swa_allocator(full: int, swa: int, page: int) -> Any:
    from sglang.srt.mem_cache.allocator.swa import SWATokenToKVPoolAllocator
    from sglang.srt.mem_cache.swa_memory_pool import SWAKVPool

    kv = SWAKVPool(size=full, size_swa=swa, page_size=page, dtype=torch.float16, head_num=1,
                   head_dim=1, swa_attention_layer_ids=[0], full_attention_layer_ids=[1],
                   device="cpu")  # fmt: skip
    return SWATokenToKVPoolAllocator(size=full, size_swa=swa, page_size=page,
                                     dtype=torch.float16, device="cpu", kvcache=kv,
                                     need_sort=False)  # fmt: skip


def _mamba_pools(full: int, states: int, page: int) -> tuple[Any, Any]:
    """SGLang's token allocator over a hybrid-linear KV pool, and its Mamba state pool.

    The state is the smallest Mamba2 shape SGLang accepts (CPU tensors of a few
    bytes); the request pool has room for every request in flight.
    """
    from sglang.srt.configs.mamba_utils import Mamba2CacheParams, Mamba2StateShape
    from sglang.srt.mem_cache.allocator import TokenToKVPoolAllocator
    from sglang.srt.mem_cache.allocator.paged import PagedTokenToKVPoolAllocator
    from sglang.srt.mem_cache.memory_pool import HybridLinearKVPool, HybridReqToTokenPool

    dims = dict(intermediate_size=2, n_groups=1, num_heads=1, head_dim=2, state_size=1)
    shape = Mamba2StateShape.create(tp_world_size=1, conv_kernel=2, **dims)
    params = Mamba2CacheParams(shape=shape, layers=[0])
    rtp = HybridReqToTokenPool(size=16, mamba_size=states, mamba_spec_state_size=16,
                               max_context_len=16, device="cpu", enable_memory_saver=False,
                               cache_params=params, mamba_layer_ids=[0],
                               enable_mamba_extra_buffer=page > 1,
                               speculative_num_draft_tokens=3)  # fmt: skip
    kv = HybridLinearKVPool(size=full, dtype=torch.float16, page_size=page, head_num=1,
                            head_dim=1, full_attention_layer_ids=[1], device="cpu",
                            mamba_pool=rtp.mamba_pool)  # fmt: skip
    if page == 1:
        alloc = TokenToKVPoolAllocator(size=full, dtype=torch.float16, device="cpu",
                                       kvcache=kv, need_sort=False)  # fmt: skip
    else:
        alloc = PagedTokenToKVPoolAllocator(size=full, page_size=page, dtype=torch.float16,
                                            device="cpu", kvcache=kv, need_sort=False)  # fmt: skip
    return alloc, rtp


# --------------------------------------------------------------------------- radix-evict
class RadixEvictSide:
    """radix-evict's HybridRadixCache over counted pools, driven the same way."""

    def __init__(self, kind: str, full: int, aux: int, page: int, window: int, policy: str,
                 mamba_grid: int, states_cap: int = -1, host_tier: Any = None,
                 ) -> None:  # fmt: skip
        from radix_evict.cache.hybrid.cache import HybridRadixCache
        from radix_evict.cache.hybrid.pool import HybridPools

        self.kind, self.page, self.window, self.grid = kind, page, window, mamba_grid
        swa, states = (aux, 0) if kind == "swa" else (0, aux)
        self.pools = HybridPools(full, swa, states, page)
        self.cache = HybridRadixCache(
            self.pools, window=window if kind == "swa" else None, mamba=kind == "mamba",
            policy=policy, mamba_grid=mamba_grid, mamba_states_per_path=states_cap,
            host_tier=host_tier,
        )  # fmt: skip
        self.aux = 1 if kind == "swa" else 2
        self.live: dict[int, Any] = {}

    def ledger(self) -> tuple[int, ...]:
        c, a = self.cache, self.aux
        return (self.pools.available(0), self.pools.available(a), c.evictable[0],
                c.evictable[a], c.protected[0], c.protected[a])  # fmt: skip

    def arrive(self, req: Request, step: Step) -> None:
        m = self.cache.match_prefix(req.prompt)
        hit = m.prefix_len
        step.ops.append(("match", hit, m.full_prefix_len, m.branching_len))
        hit, node = self._host_hit(m, step)
        lock = self.cache.inc_lock_ref(node)
        need = ceil_page(len(req.prompt) + len(req.out) - hit, self.page)
        aux_need = need if self.kind == "swa" else 1
        short = (max(0, need - self.pools.available(0)),
                 max(0, aux_need - self.pools.available(self.aux)))  # fmt: skip
        if short[0] or short[1]:
            asked = (short[0], short[1], 0) if self.kind == "swa" else (short[0], 0, short[1])
            freed = self.cache.evict(*asked)
            step.ops.append(("evict", *short, freed[0], freed[self.aux]))
        if need > self.pools.available(0) or aux_need > self.pools.available(self.aux):
            self.cache.dec_lock_ref(lock)
            step.ops.append(("refused",))
            return
        self.pools.alloc(0, need)
        self.pools.alloc(self.aux, aux_need)
        live = Live(hit, node, lock, hit + need, protected=hit)
        self.live[req.rid] = live
        step.ops.append(("admitted", need))
        if self.kind == "swa":
            self._prefill_checkpoint(req, live, m.branching_len, step)
        else:
            self._state_checkpoint(req, live, step)

    def _host_hit(self, m: Any, step: Step) -> tuple[int, Any]:
        """What the request reuses after the match (a host tier loads back here)."""
        return m.prefix_len, m.node

    def _free_out(self, live: Live, pre_len: int) -> None:
        start, new = free_out(live.evicted, live.protected, pre_len, self.window, self.page)
        self.pools.free(1, new - start)
        live.evicted = new

    def _state_checkpoint(self, req: Request, live: Live, step: Step) -> None:
        K = prefill_state_len(len(req.prompt), self.page, self.grid)
        if live.protected >= K:
            return
        if not self.pools.can_alloc(2, 1):
            freed = self.cache.evict(mamba=1)
            step.ops.append(("evict", 0, 1, freed[0], freed[2]))
            if not self.pools.can_alloc(2, 1):
                step.ops.append(("no-state",))
                return
        self.pools.alloc(2, 1)
        r = self.cache.insert(req.prompt[:K], prev_prefix_len=live.protected,
                              priority=req.priority, mamba_state=True)  # fmt: skip
        step.ops.append(("checkpoint", r.prefix_len, r.mamba_exist))
        self.cache.dec_lock_ref(live.lock)
        live.node, live.lock = r.node, self.cache.inc_lock_ref(r.node)
        live.protected = live.inserted = K

    def _prefill_checkpoint(self, req: Request, live: Live, branch: int | None,
                            step: Step) -> None:  # fmt: skip
        branch = branch if branch is not None and branch > live.protected else None
        cut = min(len(req.prompt), branch) if branch is not None else len(req.prompt)
        self._free_out(live, cut - 1)
        K = cut // self.page * self.page
        r = self.cache.insert(req.prompt[:K], prev_prefix_len=live.protected,
                              priority=req.priority, swa_evicted_len=live.evicted)  # fmt: skip
        inserted = branch is not None and branch <= K
        step.ops.append(("checkpoint", r.prefix_len, inserted))
        self.cache.dec_lock_ref(live.lock)
        live.node, live.lock = r.node, self.cache.inc_lock_ref(r.node)
        live.protected = live.inserted = K
        if inserted:
            self._free_out(live, len(req.prompt))

    def finish(self, req: Request, step: Step) -> None:
        live = self.live.pop(req.rid)
        tokens = np.concatenate([req.prompt, req.out])
        L = len(tokens) // self.page * self.page
        if self.kind == "swa":
            self._free_out(live, len(tokens) - 1)
        else:
            L = state_len(len(req.prompt), len(tokens), self.page, self.grid)
        mamba = self.kind == "mamba"
        r = self.cache.insert(tokens[:L], prev_prefix_len=live.protected, priority=req.priority,
                              inserted_len=live.inserted, swa_evicted_len=live.evicted,
                              mamba_state=mamba)  # fmt: skip
        step.ops.append(("insert", r.prefix_len, r.mamba_exist and mamba))
        tail = live.row - max(L, live.protected)
        if tail:
            self.pools.free(0, tail)
            if self.kind == "swa":
                self.pools.free(1, tail)
        self.cache.dec_lock_ref(live.lock)


def replay(side: Any, events: list[tuple[str, Request]]) -> Iterator[Step]:
    """Run the events through one side; yield what it decided at each."""
    for what, req in events:
        step = Step()
        if what == "arrive":
            side.arrive(req, step)
        elif req.rid in side.live:
            side.finish(req, step)
        step.ledger = side.ledger()
        yield step
