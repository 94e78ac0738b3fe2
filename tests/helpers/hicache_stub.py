"""SGLang 0.5.23's HiCache on CPU, for the host-tier exactness tests (after ``import_sglang()``).

SGLang's real transfer controller (``HybridCacheController``) and host pools need CUDA
streams, events and pinned buffers. :class:`StubController` stands in for them with index
bookkeeping only: a host slot pool, a write queue, a load queue and two ack queues whose
finish events complete when :meth:`StubController.complete` says so (the copy engine).
Everything that decides stays SGLang's own code: ``UnifiedRadixCache`` (Python TreeCore,
FULL component only) and its insert / match / evict / load_back / writing_check /
loading_check paths. The stub follows ``shared/peer/hicache_probe.py``.

Timing: after every cache operation :meth:`SGLangHiCache.poll` runs what the next scheduler
step's poll runs (``flush_pending_backups`` + ``check_hicache_events``) with every transfer
finished, so SGLang's write-through locks (held until the write's ack) and load-back locks
are released before the next operation. That is radix-evict's model: a transfer completes
inside the operation that starts it.

Both sides allocate from radix-evict's ``KVPool`` (device and host), so a slot freed twice
or never freed fails the test on either side. :func:`replay` runs the request sequence of
``shared/peer/sglang_bench.py`` plus HiCache's load-back on one side and yields, after every
event, what that side decided (:class:`Step`); the test compares the two sides' steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from helpers.sglang_rig import PoolAllocator, Request, build_sglang_cache, radix_key
from radix_evict import KVPool, RadixCache
from radix_evict.cache.host_tier import HostTierSpec

LOAD_BACK_THRESHOLD = 10  # UnifiedRadixCache.init_hicache
COUNTERS = ("written", "loaded", "host_evicted", "reclaimed", "dropped")


def host_tokens(device_tokens: int, ratio: float, page_size: int) -> int:
    """SGLang's host pool size for ``--hicache-ratio`` (pool_host/base.py): one page extra."""
    return (int(device_tokens * ratio) // page_size + 1) * page_size


# --------------------------------------------------------------------------- the stub
class FakeEvent:
    """A transfer's finish event: done once the controller completes it."""

    def __init__(self) -> None:
        self.done = False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:  # a blocking wait: the copy finishes now
        self.done = True

    def record(self) -> None:
        pass

    def elapsed_time(self, other: Any) -> float:
        return 0.0


class HostPool(PoolAllocator):
    """The host KV pool: whole pages of a cpu ``KVPool``; counts the tokens freed."""

    def __init__(self, size: int, page_size: int) -> None:
        super().__init__(size, page_size)
        self.shared_allocation_domain = None
        self.freed_tokens = 0

    def alloc(self, n: int, **kwargs: Any) -> torch.Tensor | None:
        assert n % self.page_size == 0, f"host alloc of {n} tokens is not whole pages"
        return super().alloc(n)

    def free(self, indices: torch.Tensor) -> int:  # type: ignore[override]
        super().free(indices)
        self.freed_tokens += indices.numel()
        return indices.numel()


class HostPoolGroupStub:
    """What the cache and the controller read of SGLang's HostPoolGroup (KV pool only)."""

    def __init__(self, host_pool: HostPool) -> None:
        from sglang.srt.mem_cache.hicache_storage import PoolName

        self._kv = PoolName.KV
        self.anchor_entry = SimpleNamespace(host_pool=host_pool, host_evict_fn=None)
        self.host_pool = host_pool

    def available_size(self) -> int:
        return self.host_pool.available_size()

    def alloc(self, n: int, *, pool: Any = None, reclaim: Any = None,
              start_owner: Any = None) -> torch.Tensor | None:  # fmt: skip
        idx = self.host_pool.alloc(n)
        if idx is None and reclaim is not None:
            reclaim(n)
            idx = self.host_pool.alloc(n)
        return idx

    def free(self, indices: torch.Tensor, *, pool: Any = None) -> int:
        return self.host_pool.free(indices)

    def get_pool(self, name: Any) -> Any:
        return self.host_pool if name == self._kv else None


class StubController:
    """The HybridCacheController surface UnifiedRadixCache uses for FULL-only L1<->L2
    without storage: write/start_writing, load/start_loading, the two ack queues."""

    def __init__(self, device: PoolAllocator, host_group: HostPoolGroupStub,
                 write_policy: str) -> None:  # fmt: skip
        self.write_policy = write_policy
        self.mem_pool_device_allocator = device
        self.mem_pool_host = host_group
        self.enable_storage = False
        self.write_queue: list[int] = []
        self.load_queue: list[int] = []
        self.ack_write_queue: list[Any] = []
        self.ack_load_queue: list[Any] = []
        self.layer_done_counter = SimpleNamespace(num_counters=3, events=[])
        self.written_tokens = 0
        self.loaded_tokens = 0

    @staticmethod
    def _ack(node_ids: list[int]) -> Any:
        return SimpleNamespace(finish_event=FakeEvent(), start_event=FakeEvent(),
                               node_ids=node_ids, num_tokens_by_pool=None, num_bytes=0,
                               timing_enabled=False)  # fmt: skip

    def write(self, device_indices: torch.Tensor, priority: Any = None, node_id: int = -1,
              extra_pools: Any = None, flush: bool = True, **kwargs: Any) -> Any:  # fmt: skip
        host = self.mem_pool_host.alloc(len(device_indices))
        if host is None:
            return None
        self.written_tokens += len(device_indices)
        self.write_queue.append(node_id)
        if flush:
            self.start_writing()
        return host

    def start_writing(self) -> None:
        if self.write_queue:
            self.ack_write_queue.append(self._ack(list(self.write_queue)))
            self.write_queue.clear()

    def load(self, host_indices: torch.Tensor, priority: Any = None, node_id: int = -1,
             extra_pools: Any = None, **kwargs: Any) -> Any:  # fmt: skip
        n = len(host_indices)
        dev = self.mem_pool_device_allocator.alloc(n) if n else torch.empty(0, dtype=torch.int64)
        if dev is None:
            return None
        self.loaded_tokens += n
        self.load_queue.append(node_id)
        return dev

    def start_loading(self) -> int:
        if not self.load_queue:
            return -1
        self.ack_load_queue.append(self._ack(list(self.load_queue)))
        self.load_queue.clear()
        return 0

    def complete(self) -> None:
        """The copy engine finishes every submitted transfer."""
        for ack in self.ack_write_queue + self.ack_load_queue:
            ack.finish_event.done = True


# --------------------------------------------------------------------------- node names
class PathNames:
    """A node's name: a digest of its root path's tokens, memoised per node object."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, bytes, int, bytes]] = {}

    def name(self, node: Any, parent: bytes, key_bytes: bytes, length: int) -> bytes:
        hit = self.memo.get(id(node))
        if hit is not None and hit[0] is node and hit[1] == parent and hit[2] == length:
            return hit[3]
        digest = hashlib.blake2b(parent + key_bytes, digest_size=16).digest()
        self.memo[id(node)] = (node, parent, length, digest)
        return digest


def describe(end: int, tokens: np.ndarray, device: bool, host: bool) -> str:
    n = len(tokens)
    return (f"[{end - n}:{end}) tokens {int(tokens[0])}..{int(tokens[-1])} "
            f"{'D' if device else ''}{'H' if host else ''}")  # fmt: skip


# --------------------------------------------------------------------------- the two sides
class SGLangHiCache:
    """SGLang's UnifiedRadixCache with HiCache on over the stub controller."""

    def __init__(self, policy: str, write_policy: str, device_tokens: int, host_size: int,
                 page_size: int) -> None:  # fmt: skip
        from sglang.srt.mem_cache.unified_cache.component_type import ComponentType

        self.FULL = ComponentType.FULL
        self.device = PoolAllocator(device_tokens, page_size)
        cache = build_sglang_cache("unified-py", self.device, policy)
        self.host = HostPool(host_size, page_size)
        group = HostPoolGroupStub(self.host)
        self.controller = StubController(self.device, group, write_policy)
        # What init_hicache and attach_hybrid_pool_to_unified_cache set for a FULL-only tree.
        cache.cache_controller = self.controller
        cache.host_pool_group = group
        cache.full_kv_pool_host = self.host
        cache.components[self.FULL]._full_kv_pool_host = self.host
        cache.tree_core.set_hicache_enabled()
        cache.write_through_threshold = 1 if write_policy == "write_through" else 2
        cache.is_write_back = write_policy == "write_back"
        cache.load_back_threshold = LOAD_BACK_THRESHOLD
        self.cache = cache
        self.names = PathNames()
        self.host_evicted = 0
        self.reclaimed = 0
        tree = cache.tree_core
        evict_leaf, reclaim = tree._evict_host_leaf, tree._release_full_host_duplicate

        def counted_evict_leaf(node: Any, *args: Any, **kwargs: Any) -> Any:
            self.host_evicted += len(node.key)
            return evict_leaf(node, *args, **kwargs)

        def counted_reclaim(node: Any, *args: Any, **kwargs: Any) -> Any:
            self.reclaimed += len(node.key)
            return reclaim(node, *args, **kwargs)

        tree._evict_host_leaf = counted_evict_leaf
        tree._release_full_host_duplicate = counted_reclaim

    def poll(self) -> None:
        """The next scheduler step's HiCache poll, every transfer having finished."""
        self.cache.flush_pending_backups()
        self.controller.complete()
        self.cache.check_hicache_events()

    def available(self) -> int:
        return self.device.available_size()

    def match(self, tokens: np.ndarray) -> tuple[int, int, Any, Any]:
        """(device prefix, host hit length, node to lock, node to load back)."""
        from sglang.srt.mem_cache.base_prefix_cache import MatchPrefixParams

        m = self.cache.match_prefix(MatchPrefixParams(key=radix_key(tokens)))
        self.poll()
        return m.device_prefix_len, m.host_hit_length, m.last_device_node, m.best_match_node

    def load_back(self, node: Any) -> bool:
        ok = self.cache.load_back(node)
        self.cache.ready_to_load_host_cache()  # the batch is built: the load is submitted
        self.poll()
        return bool(ok)

    def lock(self, node: Any) -> Any:
        return self.cache.lock(node)

    def unlock(self, lock: Any) -> None:
        self.cache.unlock(lock)

    def evict(self, n: int) -> int:
        from sglang.srt.mem_cache.base_prefix_cache import EvictParams

        freed = self.cache.evict_for_alloc(EvictParams(num_tokens=n)).num_tokens_evicted
        self.poll()
        return int(freed)

    def alloc(self, n: int) -> torch.Tensor | None:
        return self.device.alloc(n) if n else torch.empty(0, dtype=torch.int64)

    def free(self, indices: torch.Tensor) -> None:
        self.device.free(indices)

    def prefix(self, node: Any, hit: int) -> torch.Tensor:
        return self.cache.path_device_indices(node)[:hit]

    def insert(self, tokens: np.ndarray, row: torch.Tensor, priority: int, prev: int,
               inserted: int) -> int:  # fmt: skip
        from sglang.srt.mem_cache.base_prefix_cache import InsertParams

        r = self.cache.insert(
            InsertParams(
                key=radix_key(tokens),
                value=row,
                priority=priority,
                prev_prefix_len=prev,
                inserted_len=inserted,
            )
        )
        self.poll()
        return int(r.prefix_len)

    def counters(self) -> dict[str, int]:
        return dict(
            written=self.controller.written_tokens,
            loaded=self.controller.loaded_tokens,
            host_evicted=self.host_evicted,
            reclaimed=self.reclaimed,
            dropped=self.host.freed_tokens - self.host_evicted - self.reclaimed,
        )

    def state(self) -> tuple[frozenset[bytes], frozenset[bytes], dict[bytes, str]]:
        """The device-resident and the host-resident nodes' names, and what each name is."""
        device, host, what = set(), set(), {}
        stack = [(self.cache.tree_core.root_node, b"", 0)]
        while stack:
            node, parent, depth = stack.pop()
            for child in node.children.values():
                toks = child.key.token_ids
                name = self.names.name(child, parent, toks.tobytes(), len(toks))
                data = child.component_data[self.FULL]
                on_d, on_h = data.value is not None, data.host_value is not None
                if on_d:
                    device.add(name)
                if on_h:
                    host.add(name)
                end = depth + len(toks)
                what[name] = describe(end, np.asarray(toks), on_d, on_h)
                stack.append((child, name, end))
        return frozenset(device), frozenset(host), what

    def check_end(self, pool_tokens: int) -> None:
        assert self.cache.protected_size() == 0
        assert self.device.available_size() + self.cache.evictable_size() == pool_tokens


class RadixEvictHiCache:
    """radix-evict's RadixCache with a host tier, driven through its public API."""

    def __init__(self, policy: str, write_policy: str, device_tokens: int, host_size: int,
                 page_size: int) -> None:  # fmt: skip
        self.pool = KVPool(size=device_tokens, page_size=page_size, device="cpu", layers=0)
        self.cache = RadixCache(
            self.pool, page_size=page_size, policy=policy,
            host_tier=HostTierSpec(tokens=host_size, write_policy=write_policy,
                                   load_back_threshold=LOAD_BACK_THRESHOLD),
        )  # fmt: skip
        self.names = PathNames()

    def available(self) -> int:
        return self.pool.available_size()

    def match(self, tokens: np.ndarray) -> tuple[int, int, Any, Any]:
        m = self.cache.match_prefix(tokens)
        self._indices = m.indices
        return m.prefix_len, m.host_len, m.last_node, m.host_node

    def load_back(self, node: Any) -> bool:
        new = self.cache.load_back(node)
        if new is None:
            return False
        self._indices = torch.cat([self._indices, new.to(self._indices.device)])
        return True

    def lock(self, node: Any) -> Any:
        self.cache.inc_lock_ref(node)
        return node

    def unlock(self, node: Any) -> None:
        self.cache.dec_lock_ref(node)

    def evict(self, n: int) -> int:
        return self.cache.evict(n)

    def alloc(self, n: int) -> torch.Tensor | None:
        return self.pool.alloc(n) if n else torch.empty(0, dtype=torch.int64)

    def free(self, indices: torch.Tensor) -> None:
        self.pool.free(indices)

    def prefix(self, node: Any, hit: int) -> torch.Tensor:
        return self._indices

    def insert(self, tokens: np.ndarray, row: torch.Tensor, priority: int, prev: int,
               inserted: int) -> int:  # fmt: skip
        return self.cache.insert(
            tokens, row, priority=priority, prev_prefix_len=prev, inserted_len=inserted
        )

    def counters(self) -> dict[str, int]:
        tier = self.cache.host_tier
        assert tier is not None
        s = tier.stats
        return dict(written=s.written_tokens, loaded=s.loaded_tokens,
                    host_evicted=s.evicted_tokens, reclaimed=s.reclaimed_tokens,
                    dropped=s.dropped_tokens)  # fmt: skip

    def state(self) -> tuple[frozenset[bytes], frozenset[bytes], dict[bytes, str]]:
        device, host, what = set(), set(), {}
        stack = [(self.cache.root, b"", 0)]
        while stack:
            node, parent, depth = stack.pop()
            for child in [*node.children.values(), *(node.host_children or {}).values()]:
                kb = bytes(child.key_bytes)
                name = self.names.name(child, parent, kb, child.num_tokens)
                on_d, on_h = child.value is not None, child.host_value is not None
                if on_d:
                    device.add(name)
                if on_h:
                    host.add(name)
                end = depth + child.num_tokens
                what[name] = describe(end, np.frombuffer(kb, dtype=np.int64), on_d, on_h)
                stack.append((child, name, end))
        return frozenset(device), frozenset(host), what

    def check_end(self, pool_tokens: int) -> None:
        assert self.cache.protected_size() == 0
        assert self.pool.available_size() + self.cache.evictable_size() == pool_tokens


Side = SGLangHiCache | RadixEvictHiCache


# --------------------------------------------------------------------------- the replay
@dataclass
class Step:
    """What one side decided in one event, and where every node's KV is after it."""

    event: int
    what: str  # "arrive 12" / "finish 12"
    ops: list[tuple[Any, ...]]
    counters: dict[str, int]
    device: frozenset[bytes]
    host: frozenset[bytes]
    nodes: dict[bytes, str]
    held: list[torch.Tensor]  # slots the requests in flight hold (for invariant checks)


def replay(events: list[tuple[str, Request]], side: Side, page_size: int) -> Iterator[Step]:
    """sglang_bench.py's per-request operations plus HiCache's load-back, on ``side``.

    arrive: match; if a host hit: load_back(its host node) and, if that succeeds, the
    request's node is the host node and its hit grows by the host length; lock; evict
    the shortfall; alloc. finish: insert prompt+output, the prompt's split insert, free
    the partial last page, unlock.
    """
    P = page_size
    state: dict[int, Any] = {}
    for i, (kind, req) in enumerate(events):
        ops: list[tuple[Any, ...]] = []
        plen = len(req.prompt)
        if kind == "arrive":
            dev, host_len, node, host_node = side.match(req.prompt)
            ops.append(("match", dev, host_len))
            hit = dev
            if host_len > 0:
                ok = side.load_back(host_node)
                ops.append(("load_back", host_len, ok))
                if ok:
                    hit, node = dev + host_len, host_node
            lock = side.lock(node)
            need = -(-(plen + len(req.out) - hit) // P) * P
            short = need - side.available()
            if short > 0:
                ops.append(("evict", short, side.evict(short)))
            new = side.alloc(need)
            ops.append(("alloc", need, new is not None))
            if new is None:
                side.unlock(lock)
                state[req.rid] = None
            else:
                prefix = side.prefix(node, hit)
                assert len(prefix) == hit, f"{len(prefix)} prefix slots for a hit of {hit}"
                state[req.rid] = (hit, lock, torch.cat([prefix, new]))
        else:
            st = state.pop(req.rid)
            if st is not None:
                hit, lock, row = st
                full = np.concatenate([req.prompt, req.out])
                L, Lp = len(full) // P * P, plen // P * P
                if L:
                    ops.append(("insert", side.insert(full[:L], row[:L], req.priority, hit, 0)))
                if 0 < Lp < L:
                    ops.append(
                        ("insert", side.insert(req.prompt[:Lp], row[:Lp], req.priority + 1, Lp, Lp))
                    )
                if len(row) > L:
                    side.free(row[L:])
                side.unlock(lock)
        device, host, nodes = side.state()
        held = [s[2][s[0] :] for s in state.values() if s is not None]
        yield Step(i, f"{kind} {req.rid}", ops, side.counters(), device, host, nodes, held)
