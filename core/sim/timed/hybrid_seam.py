"""The timed server on a hybrid model's cache: a small adapter, not a second server.

The timed server (``server.py``) talks to a ``RadixCache`` and an ``Allocator``
through a dozen calls: ``match_prefix``, ``inc_lock_ref``/``dec_lock_ref``,
``insert``, ``locate``, ``evict``, ``evictable_size`` and the pool's ``alloc``,
``free`` and ``available_size``. :class:`HybridServerCache` and
:class:`HybridServerPool` give :class:`~radix_evict.cache.hybrid.cache.HybridRadixCache`
that interface, with the per-request rules ``hybrid_replay`` applies around the
tree (SGLang 0.5.23's scheduler steps, ``docs/hybrid.md``):

- window KV is allocated and freed with full KV; before each insert the request
  frees its own window KV that fell behind the window (``hybrid_replay.free_out``,
  SGLang's ``free_swa_out_of_window_slots``, ``mem_cache/common.py:75-140``);
  the server's pool is the smaller of the two pools' free room;
- a Mamba request holds one state from its first match to its finish; each insert
  gives the tree a copy at the key's tracked point (``hybrid_replay.state_len``),
  evicting a state for it if it must (``components/mamba.py:527-554``); the
  full KV past that point stays the request's (``owed``) and is freed when it
  finishes or is retracted;
- with a host tier, a match that reaches host copies hands the server a host
  node; the server's ``load_back`` then brings them back
  (``HybridRadixCache.load_back``) and the request's prefix ends there.

The cost model charges prefill per component (:func:`hybrid_pairs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from radix_evict.cache.hybrid.cache import HybridRadixCache
from radix_evict.cache.hybrid.layout import HybridLayout
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode
from radix_evict.sim.models.work import prefill_work

__all__ = ["HybridServerCache", "HybridServerPool", "RequestState", "hybrid_pairs", "mamba_track"]


def hybrid_pairs(layout: HybridLayout) -> Any:
    """The attention pairs a cost model calibrated on all-full-attention layers should charge.

    ``per_mpair_ms`` is per (new token, earlier token) pair over every layer of a
    model whose layers are all full attention, so one layer's pair costs 1/L of it.
    A hybrid layout's pairs are ``work.prefill_work``'s layer x pairs (full layers
    x all earlier tokens, window layers x at most ``window``) over its L layers;
    recurrent layers add no pairs, their work is linear in new tokens and stays in
    ``per_token_ms``. A full-attention layout gives ``attention_pairs`` exactly.
    """
    layers = layout.layers

    def pairs(cached: int, new: int) -> float:
        w = prefill_work(layout, cached, new)
        return (w.full_pairs + w.window_pairs) / layers

    return pairs


class RequestState:
    """What the adapter keeps of one request (the server's per-request context)."""

    __slots__ = ("evicted", "full_hit", "handle", "inserted", "node", "owed", "plen",
                 "protected", "state")

    def __init__(self, plen: int) -> None:
        self.plen = plen
        self.evicted = 0  # window floor: its window KV below was freed by itself
        self.protected = 0  # the prefix the tree owns for it (match, then inserts)
        self.inserted = 0  # what it inserted itself (SGLang's cache_inserted_len)
        self.node: HybridNode | None = None  # where ``protected`` ends
        self.owed = 0  # Mamba: full slots the server counts as the tree's that are its own
        self.state = False  # Mamba: holds its running state
        self.handle: _Handle | None = None  # its current lock
        self.full_hit = -1  # full KV's own hit at its first match


class _Handle:
    """One lock: the node, the receipt its release needs, and whose lock it is."""

    __slots__ = ("node", "receipt", "st")

    def __init__(self, node: HybridNode, st: RequestState) -> None:
        self.node, self.st = node, st
        self.receipt: Any = None


class _HostView:
    """The hybrid host tier as the timed server's copy clock reads it (``host_copies.py``):
    full-KV tokens loaded and written; write-through's writes never block."""

    write_back = False

    def __init__(self, host: Any) -> None:
        self._host = host

    @property
    def stats(self) -> Any:
        st = self._host.stats
        return SimpleNamespace(loaded_tokens=st.loaded[FULL], written_tokens=st.written[FULL])


@dataclass
class _Match:
    prefix_len: int
    last_node: _Handle
    indices: torch.Tensor
    host_node: Any = None
    host_len: int = 0


class HybridServerPool:
    """The server's allocator over the hybrid pools: counts, slot numbers all zero."""

    def __init__(self, cache: HybridRadixCache) -> None:
        self.cache, self.pools = cache, cache.pools
        self.swa = cache.aux == SWA

    def available_size(self) -> int:
        free = self.pools.available(FULL)
        return min(free, self.pools.available(SWA)) if self.swa else free

    def alloc(self, n: int) -> torch.Tensor | None:
        if n > self.available_size():
            return None
        self.pools.alloc(FULL, n)
        if self.swa:
            self.pools.alloc(SWA, n)
        return torch.zeros(n, dtype=torch.int64)

    def free(self, slots: torch.Tensor) -> None:
        n = len(slots)
        self.pools.free(FULL, n)
        if self.swa:
            self.pools.free(SWA, n)


class HybridServerCache:
    """The calls the timed server makes of a ``RadixCache``, on a hybrid tree."""

    def __init__(self, cache: HybridRadixCache, track: Any) -> None:
        self.cache, self.pools, self.P = cache, cache.pools, cache.page_size
        self.host_tier = _HostView(cache.host) if cache.host is not None else None
        self.host_loaded = 0  # prefix tokens load-backs gave the requests
        self._pending: tuple[Any, RequestState] | None = None  # a host hit, until load_back
        self.kind = "swa" if cache.aux == SWA else "mamba" if cache.aux == MAMBA else "full"
        self.track = track  # Mamba: (prompt, total) -> where the last state was saved
        self.policy = cache.policy
        self.evicted = [0, 0, 0]
        self._last: RequestState | None = None  # the last insert's request (for locate)

    def evictable_size(self) -> int:
        ev = self.cache.evictable_size(FULL)
        return min(ev, self.cache.evictable_size(SWA)) if self.kind == "swa" else ev

    def evict(self, short: int) -> int:
        """Free ``short`` more of the server's room: full KV, and window KV beside it."""
        pools = self.pools
        free = pools.available(FULL)
        want = (min(free, pools.available(SWA)) if self.kind == "swa" else free) + short
        swa = max(0, want - pools.available(SWA)) if self.kind == "swa" else 0
        freed = self.cache.evict(max(0, want - free), swa)
        self.evicted = [a + b for a, b in zip(self.evicted, freed, strict=True)]
        return freed[FULL]

    def _state(self) -> bool:
        """Take one state slot, evicting a state for it if none is free."""
        if not self.pools.can_alloc(MAMBA, 1):
            self.evicted[MAMBA] += self.cache.evict(mamba=1)[MAMBA]
            if not self.pools.can_alloc(MAMBA, 1):
                return False
        self.pools.alloc(MAMBA, 1)
        return True

    def match_prefix(self, key: Any, ctx: RequestState) -> _Match:
        if ctx.owed:  # retracted since its last insert: its own tail was freed by the server
            self.pools.free(FULL, ctx.owed)
            ctx.owed = 0
        if self.kind == "mamba" and not ctx.state:
            if not self._state():
                raise RuntimeError("no Mamba state slot for a running request: every state "
                                   "is locked (the running cap should prevent this)")
            ctx.state = True
        m = self.cache.match_prefix(np.asarray(key, dtype=np.int64))
        ctx.evicted = ctx.inserted = 0
        if ctx.full_hit < 0:
            ctx.full_hit = m.full_prefix_len
        ctx.protected, ctx.node = m.prefix_len, m.node
        ctx.handle = _Handle(m.node, ctx)
        self._pending = None
        if m.host_node is not None and m.host_node is not m.node:  # the server loads it next
            self._pending = (m, ctx)
            return _Match(m.prefix_len, ctx.handle, torch.zeros(m.prefix_len, dtype=torch.int64),
                          _Handle(m.host_node, ctx), m.host_prefix_len - m.prefix_len)
        return _Match(m.prefix_len, ctx.handle, torch.zeros(m.prefix_len, dtype=torch.int64))

    def load_back(self, handle: _Handle) -> torch.Tensor | None:
        """The match's host part to the device (``HybridRadixCache.load_back``); None when
        nothing was loaded. The request's prefix then ends at the host node."""
        assert self._pending is not None, "load_back without a host hit just before"
        m, ctx = self._pending
        self._pending = None
        assert handle.node is m.host_node and handle.st is ctx
        n = self.cache.load_back(m)
        if n.node is m.node:
            return None
        ctx.protected, ctx.node, ctx.handle = n.prefix_len, n.node, handle
        self.host_loaded += n.prefix_len - m.prefix_len
        return torch.zeros(n.prefix_len - m.prefix_len, dtype=torch.int64)

    def inc_lock_ref(self, handle: _Handle) -> None:
        handle.receipt = self.cache.inc_lock_ref(handle.node)

    def dec_lock_ref(self, handle: _Handle) -> None:
        """A checkpoint releases the old lock after taking the new one; releasing the
        current one means the request leaves (finish, retraction, a match undone)."""
        self.cache.dec_lock_ref(handle.receipt)
        if handle is handle.st.handle:
            handle.st.handle = None
            self.settle(handle.st)

    def settle(self, st: RequestState) -> None:
        """A request left: its own state and the full KV it still held past the tree's."""
        if st.owed:
            self.pools.free(FULL, st.owed)
            st.owed = 0
        if st.state:
            self.pools.free(MAMBA, 1)
            st.state = False

    def locate(self, key: Any) -> tuple[int, _Handle]:
        """After a checkpoint insert: the lock moves to where the request's tree part ends."""
        st = self._last
        assert st is not None and st.node is not None
        st.handle = _Handle(st.node, st)
        return len(key), st.handle

    def insert(self, key: Any, values: Any = None, *, priority: int = 0,
               prev_prefix_len: int = 0, inserted_len: int = 0, context: Any = None) -> None:
        """The server's checkpoint or finish insert, by the hybrid rules."""
        st: RequestState = context
        cache, n = self.cache, len(key)
        key = np.asarray(key, dtype=np.int64)
        if self.kind == "full":
            r = cache.insert(key, prev_prefix_len=prev_prefix_len, inserted_len=inserted_len,
                             priority=priority)
            if prev_prefix_len != n:  # not the prompt's own checkpoint at priority + 1
                st.node, st.protected = r.node, n
            self._last = st
            return
        if self.kind == "swa":
            self._insert_window(st, key, priority)
        else:
            self._insert_state(st, key, priority)
        self._last = st

    def _insert_window(self, st: RequestState, key: np.ndarray, priority: int) -> None:
        from radix_evict.sim.hybrid_replay import free_out

        n = len(key)
        assert self.cache.window is not None
        start, new = free_out(st.evicted, st.protected, n - 1, self.cache.window, self.P)
        self.pools.free(SWA, new - start)
        st.evicted = new
        r = self.cache.insert(key, prev_prefix_len=st.protected, inserted_len=st.inserted,
                              priority=priority, swa_evicted_len=st.evicted)
        st.node, st.protected = r.node, n
        st.inserted = n

    def _insert_state(self, st: RequestState, key: np.ndarray, priority: int) -> None:
        n = len(key)
        K = self.track(min(n, st.plen), n)
        if st.protected < K and self._state():  # the tree's own copy of the state
            r = self.cache.insert(key[:K], prev_prefix_len=st.protected,
                                  inserted_len=st.inserted, priority=priority,
                                  mamba_state=True)
            st.node, st.protected = r.node, K
            st.inserted = K
        st.owed = n - st.protected  # the server counts [protected, n) as the tree's


def mamba_track(page: int, grid: int, interval: int) -> Any:
    """Where a request's last state was saved, for a key of ``total`` tokens of which
    ``prompt`` are prompt (``hybrid_replay.state_len``'s rule)."""

    def track(prompt: int, total: int) -> int:
        if page == 1:
            return total
        step = math.lcm(grid, interval)
        return max(prompt // grid * grid, total // step * step)

    return track
