"""SGLang 0.5.23's unified tree WITH its host tier (HiCache) for SWA and Mamba, on CPU.

The no-host rig (``helpers.hybrid_rig``) drives SGLang's ``UnifiedRadixCache`` with a
``SWAComponent`` or a ``MambaComponent`` over its real allocators beside radix-evict's
``HybridRadixCache``. This module adds each side's host tier and reuses that rig's
stream, operations and step comparison (:class:`hybrid_rig.Step`, ``hybrid_rig.replay``):

- SGLang: its real ``HostPoolGroup`` (``pool_host/group.py``: ``alloc`` with one reclaim,
  ``resolve_host_transfers``' per-pool allocation with its host eviction callback and
  rollback) over index-only host pools (:class:`IndexHostPool`: slot counting, no
  buffers), with the pool entries ``build_hybrid_swa_group`` / ``build_hybrid_mamba_stack``
  register (``hybrid_pool_assembler.py:448-471, 1361-1374``, with the callbacks its
  strategies pass, ``:2068-2069, 2149-2151``): the window's or the state's host eviction
  (``cache.evict_host(n, SWA|MAMBA)``), SGLang's own device eviction for a load
  (``_evict_swa_for_device_alloc`` / ``_evict_mamba_for_device_alloc``,
  ``hybrid_pool_assembler.py:62-79``) and the device allocators' ``alloc``/``free``.
  The transfer controller is SGLang's ``HybridCacheController`` class built without its
  ``__init__`` (:class:`IndexController`): its own ``write`` / ``allocate_host_transfers``
  (``hybrid_cache_controller.py:516-581``) and ``load`` / ``_resolve_device_transfers``
  (``:1008-1068, 1851-1918``) run unchanged; only ``start_writing`` / ``start_loading``
  (which launch copies on CUDA streams) are replaced by acks whose finish events are done
  at once. The component handles are set as ``_apply_stack_result`` sets them
  (``hybrid_pool_assembler.py:2488-2500``) and ``tree_core.has_swa_host_pool`` as
  ``init_hicache`` does (``unified_radix_cache.py:517-522``).
- radix-evict: ``HybridRadixCache`` with a ``HostTierSpec`` of the same ratio, so the
  host pools have SGLang's sizes (asserted when the sides are built). Device pools must
  be whole pages, as SGLang's pool configurator makes them: SGLang sizes a host pool from
  its KV pool's configured size, radix-evict from its pool rounded down to pages.

After every cache operation SGLang's side runs what the next scheduler step's poll runs
(``flush_pending_backups`` + ``check_hicache_events``) with every transfer finished, so
write-through and load-back locks are gone before the next operation: radix-evict's
model of a transfer (the FULL-only ``helpers.hicache_stub`` does the same).

The arrival gains HiCache's load-back (``init_load_back``,
``unified_radix_cache.py:3586-3624``): when the match reports a host hit on any
component (or its best node's full KV is host-only), ``load_back(best node)``; on success
the request reuses the prefix up to that node. Each step adds a ``("host", full hit,
window hit, state hit)`` operation after the match, a ``("load_back", ok, reused)``
operation, and to the ledger: the free slots of each host pool and, cumulatively per
component, what was written to host, loaded back and freed on host.

Driven without a request (``load_back(node, req=None)``): SGLang's Mamba
``prepare_load_back`` would first take the request's own state slot and copy the host
state into it too (``components/mamba.py:794-819, 901-911``); here the request takes its
slot after the load-back, as the no-host rig does. The amounts are the same; only the
order of that one allocation against the load's own differs.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

from helpers.hicache_stub import LOAD_BACK_THRESHOLD, FakeEvent
from helpers.hybrid_rig import RadixEvictSide, SGLangSide, Step
from helpers.sglang_rig import PoolAllocator
from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.hybrid.host import host_sizes


def sglang_host_sizes(kind: str, full: int, aux: int, page: int, ratio: float) -> tuple[int, int]:
    """SGLang's host pool sizes for ``--hicache-ratio``: the KV and SWA host pools
    ``(int(device * ratio) // page + 1) * page`` (``pool_host/base.py:224-229``), the
    Mamba host pool ``int(states * ratio) + 1`` (page 1, ``pool_host/mamba.py:171-174``)."""
    kv = (int(full * ratio) // page + 1) * page
    return kv, (int(aux * ratio) // page + 1) * page if kind == "swa" else int(aux * ratio) + 1


class IndexHostPool(PoolAllocator):
    """A host pool of slot indices only: what ``HostPoolGroup`` and the components read."""

    def __init__(self, size: int, page_size: int) -> None:
        super().__init__(size, page_size)
        self.layout = "layer_first"
        self.logical_size = size
        self.can_use_write_back_jit = False
        self.shared_allocation_domain = None

    def alloc(self, n: int, **kwargs: Any) -> torch.Tensor | None:
        assert n % self.page_size == 0, f"host alloc of {n} is not whole pages"
        return super().alloc(n)

    def free(self, indices: torch.Tensor) -> int:  # type: ignore[override]
        super().free(indices)
        return indices.numel()


def _index_controller_class() -> type:
    from sglang.srt.mem_cache.hybrid_cache.hybrid_cache_controller import (
        HybridCacheController,
    )

    class IndexController(HybridCacheController):  # type: ignore[misc]
        """SGLang's controller with its allocation paths, minus the CUDA copies."""

        def __init__(self, device_alloc: Any, group: Any, write_policy: str,
                     names: dict[Any, int]) -> None:  # fmt: skip
            # No super().__init__: it builds CUDA streams, pinned buffers and threads.
            self.mem_pool_device_allocator = device_alloc
            self.mem_pool_host = group
            self.write_policy = write_policy
            self.enable_storage = False
            self.device = torch.device("cpu")
            self.write_queue: list[Any] = []
            self.load_queue: list[Any] = []
            self.ack_write_queue: list[Any] = []
            self.ack_load_queue: list[Any] = []
            self.layer_done_counter = SimpleNamespace(num_counters=3, events=[])
            self.names = names  # PoolName -> component column (0 full, 1 window, 2 Mamba)
            self.written = [0, 0, 0]
            self.loaded = [0, 0, 0]

        def _count(self, ops: list[Any], into: list[int], side: str) -> None:
            for op in ops:
                into[0] += len(getattr(op, side))
                for t in op.pool_transfers or ():
                    idx = getattr(t, side)
                    into[self.names[t.name]] += 0 if idx is None else len(idx)

        @staticmethod
        def _ack(ops: list[Any]) -> Any:
            ids = [i for op in ops for i in op.node_ids]
            done = FakeEvent()
            done.done = True  # the copy engine finishes at once
            return SimpleNamespace(finish_event=done, start_event=FakeEvent(), node_ids=ids,
                                   num_tokens_by_pool=None, num_bytes=0,
                                   timing_enabled=False)  # fmt: skip

        def start_writing(self) -> None:
            if self.write_queue:
                self._count(self.write_queue, self.written, "host_indices")
                self.ack_write_queue.append(self._ack(self.write_queue))
                self.write_queue.clear()

        def start_loading(self) -> int:
            if not self.load_queue:
                return -1
            self._count(self.load_queue, self.loaded, "device_indices")
            self.ack_load_queue.append(self._ack(self.load_queue))
            self.load_queue.clear()
            return 0

        def append_host_mem_release(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("a host release for the storage tier: none is configured")

    return IndexController


class _Polled:
    """The cache as the rig calls it: each state-changing call is followed by the next
    scheduler step's HiCache poll (every transfer finished)."""

    POLLED = frozenset({"match_prefix", "insert", "evict", "load_back"})

    def __init__(self, cache: Any) -> None:
        self._cache = cache

    def poll(self) -> None:
        self._cache.ready_to_load_host_cache()  # the batch is built: loads are submitted
        self._cache.check_hicache_events()  # flushes pending backups, reaps every ack

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._cache, name)
        if name not in self.POLLED:
            return attr

        def polled(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            self.poll()
            return out

        return polled


class SGLangHostSide(SGLangSide):
    """SGLang's unified tree with HiCache on (write-through policies) over index-only
    host pools and the index-only controller."""

    def __init__(self, kind: str, full: int, aux: int, page: int, window: int, policy: str,
                 mamba_grid: int, write_policy: str, ratio: float, backend: str = "python",
                 ) -> None:  # fmt: skip
        super().__init__(kind, full, aux, page, window, policy, mamba_grid, backend=backend)
        from sglang.srt.mem_cache.hicache_storage import PoolName
        from sglang.srt.mem_cache.hybrid_cache.hybrid_pool_assembler import (
            _evict_mamba_for_device_alloc,
            _evict_swa_for_device_alloc,
        )
        from sglang.srt.mem_cache.pool_host.group import HostPoolGroup, PoolEntry

        cache, CT = self.cache, self.CT
        kv_size, aux_size = sglang_host_sizes(kind, full, aux, page, ratio)
        self.host = [IndexHostPool(kv_size, page),
                     IndexHostPool(aux_size, page if kind == "swa" else 1)]  # fmt: skip
        if kind == "swa":
            name, ct, dev_alloc = PoolName.SWA, CT.SWA, self.alloc.swa_attn_allocator
            evict_for_load = _evict_swa_for_device_alloc
        else:
            name, ct, dev_alloc = PoolName.MAMBA, CT.MAMBA, self.rtp.mamba_allocator
            evict_for_load = _evict_mamba_for_device_alloc

        def mapper(layer: int) -> int:
            return layer

        group = HostPoolGroup([
            PoolEntry(name=PoolName.KV, host_pool=self.host[0], device_pool=None,
                      layer_mapper=mapper, is_primary_index_anchor=True),
            PoolEntry(name=name, host_pool=self.host[1], device_pool=None, layer_mapper=mapper,
                      host_evict_fn=lambda n: cache.evict_host(n, ct),
                      device_evict_fn=lambda n: evict_for_load(cache, n),
                      device_alloc_fn=dev_alloc.alloc,
                      device_free_fn=dev_alloc.free),
        ])  # fmt: skip
        cls = _index_controller_class()
        self.controller = cls(self.alloc, group, write_policy,
                              {PoolName.KV: 0, PoolName.SWA: 1, PoolName.MAMBA: 2})  # fmt: skip
        # What attach_hybrid_pool_to_unified_cache (_apply_stack_result) and init_hicache set.
        cache.cache_controller = self.controller
        cache.host_pool_group = group
        cache.full_kv_pool_host = self.host[0]
        cache.components[CT.FULL]._full_kv_pool_host = self.host[0]
        if kind == "swa":
            cache.swa_kv_pool_host = self.host[1]
            cache.components[CT.SWA]._swa_kv_pool_host = self.host[1]
        else:
            cache.mamba_pool_host = self.host[1]
            cache.components[CT.MAMBA]._mamba_pool_host = self.host[1]
        cache.tree_core.set_hicache_enabled()
        if kind == "swa":
            cache.tree_core.has_swa_host_pool = True
        cache.write_through_threshold = 1 if write_policy == "write_through" else 2
        cache.is_write_back = False
        cache.load_back_threshold = LOAD_BACK_THRESHOLD
        self.real = cache
        self.cache = _Polled(cache)
        self.aux_col = 1 if kind == "swa" else 2
        # Host slots the tree frees (host eviction, dropped copies), per column; a backup's
        # rollback frees through the pool group and is not counted (radix-evict's neither).
        self.host_freed = [0, 0, 0]
        drain, cols = cache._drain_host_frees, {CT.FULL: 0, ct: self.aux_col}

        def counted_drain(host_frees: dict[Any, list[torch.Tensor]]) -> None:
            for c, values in host_frees.items():
                self.host_freed[cols[c]] += sum(v.numel() for v in values)
            drain(host_frees)

        cache._drain_host_frees = counted_drain

    def _host_hit(self, m: Any, hit: int, node: Any, step: Step) -> tuple[int, Any]:
        swa = m.swa_host_hit_length if self.kind == "swa" else 0
        mamba = m.mamba_host_hit_length if self.kind == "mamba" else 0
        step.ops.append(("host", m.host_hit_length, swa, mamba))
        best = m.best_match_node
        tc = self.real.tree_core
        if tc.is_full_device_evicted(best) or m.host_hit_length > 0 or swa > 0 or mamba > 0:
            ok = bool(self.cache.load_back(best))
            if ok:
                hit, node = len(self.real.path_device_indices(best)), best
            step.ops.append(("load_back", ok, hit))
        return hit, node

    def ledger(self) -> tuple[int, ...]:
        c = self.controller
        return (*super().ledger(), self.host[0].available_size(), self.host[1].available_size(),
                c.written[0], c.written[self.aux_col], c.loaded[0], c.loaded[self.aux_col],
                self.host_freed[0], self.host_freed[self.aux_col])  # fmt: skip


class RadixEvictHostSide(RadixEvictSide):
    """radix-evict's HybridRadixCache with a host tier of the same sizes."""

    def __init__(self, kind: str, full: int, aux: int, page: int, window: int, policy: str,
                 mamba_grid: int, write_policy: str, ratio: float) -> None:  # fmt: skip
        spec = HostTierSpec(ratio=ratio, write_policy=write_policy,
                            load_back_threshold=LOAD_BACK_THRESHOLD)  # fmt: skip
        super().__init__(kind, full, aux, page, window, policy, mamba_grid, host_tier=spec)
        host = self.cache.host
        assert host is not None
        sizes = host_sizes(spec, self.pools.size, page)
        sg_sizes = sglang_host_sizes(kind, full, aux, page, ratio)
        assert (sizes[0], sizes[self.aux]) == sg_sizes, (sizes, sg_sizes)
        self.hostt = host

    def _host_hit(self, m: Any, step: Step) -> tuple[int, Any]:
        step.ops.append(("host", m.host_len, m.swa_host_len, m.mamba_host_len))
        if m.host_node is None or m.host_node is m.node:
            return m.prefix_len, m.node
        r = self.cache.load_back(m)
        ok = r is not m
        step.ops.append(("load_back", ok, r.prefix_len))
        return r.prefix_len, r.node

    def ledger(self) -> tuple[int, ...]:
        h, a = self.hostt, self.aux
        s = h.stats
        return (*super().ledger(), h.pools.available(0), h.pools.available(a),
                s.written[0], s.written[a], s.loaded[0], s.loaded[a],
                s.host_evicted[0], s.host_evicted[a])  # fmt: skip


LEDGER = ("device free full", "device free aux", "evictable full", "evictable aux",
          "protected full", "protected aux", "host free full", "host free aux",
          "written full", "written aux", "loaded full", "loaded aux",
          "host freed full", "host freed aux")  # fmt: skip


def diff(a: Step, b: Step) -> str:
    """What differs between SGLang's step and radix-evict's, by name."""
    out = []
    if a.ops != b.ops:
        out.append(f"ops: SGLang {a.ops} | radix-evict {b.ops}")
    for name, x, y in zip(LEDGER, a.ledger, b.ledger, strict=True):
        if x != y:
            out.append(f"{name}: SGLang {x} | radix-evict {y}")
    return "\n  ".join(out)
