"""The host tier (HiCache) of the hybrid tree: per-component host copies, backups, load-backs.

SGLang 0.5.23's unified tree keeps, beside each component's device value, a
``host_value`` (``unified_tree_core.py:103-165``). The rules this module follows
(docs/hybrid.md, "Host tier", gives each with its source):

- backup (write-through): an insert counts a hit on every node it walks past
  the request's own tokens; at the write policy's threshold an unbacked node is
  backed up with its unbacked ancestors, ancestors first, stopping at the first
  failure (``unified_tree_core.py:1104-1123, 2622-2644``;
  ``unified_radix_cache.py:1681-1716``). A backup copies the node's full KV,
  the window KV of every device node within one window above it that has none
  on host (``components/swa.py:110-146``) and the node's Mamba state
  (``components/mamba.py:876-885``). A backed-up insert target whose window or
  state has no host copy yet gets an incremental backup (``unified_tree_core.py:1430-1466``),
  unless that node was backed up earlier in the same insert: its write is still in
  flight (``write_through_pending_id``, ``unified_tree_core.py:1438-1447``);
- a backup short of full host room evicts host leaves for the shortfall and
  fails if that falls short (``unified_radix_cache.py:1737-1749``); a window or
  state host pool short of room evicts as much as the backup needs from its
  host LRU, retries once, and on failure gives back the full slots it took
  (``pool_host/group.py:175-238``, ``hybrid_cache_controller.py:540-553``);
- device eviction of a backed-up leaf frees every device component and keeps
  the node host-only (``unified_tree_core.py:1788-1823, 2090-2123``);
- a load-back brings the host-only path's full KV, the host-only window
  nodes within one window of the match's end, and its host-only Mamba state
  to the device, if the full part reaches ``load_back_threshold`` or an
  auxiliary part is needed (``unified_radix_cache.py:1820-1935``,
  ``components/{full,swa,mamba}.py`` ``build_hicache_transfers``).

Transfers complete inside the operation that starts them, as in the plain host
tier (``cache/host_tier.py``), so SGLang's in-flight locks and acks never show
beyond the operation, with two traces inside it that SGLang's decisions do show: a
backup made during an insert is in flight until that insert ends (``in_flight``),
and a load-back's host lock, once released, leaves the window's or state's
host-only copies at the host LRU's MRU end (:meth:`HybridHost.release_host_lock`).
Write-back is not modelled here (refused by name).

These rules are compared with SGLang's own unified tree with HiCache, event by event
(``tests/cache/hybrid/test_hybrid_host_exact_sglang.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from radix_evict.cache.host_tier import WRITE_BACK, HostTierSpec
from radix_evict.cache.hybrid.lru import ComponentLRU
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode
from radix_evict.cache.hybrid.pool import HybridPools

if TYPE_CHECKING:
    from radix_evict.cache.hybrid.cache import HybridRadixCache


class HostLRU(ComponentLRU):
    """An auxiliary component's host-only copies: no host locks are modelled, none skipped."""

    def prev_unlocked(self, node: HybridNode | None) -> HybridNode | None:
        return self._prev[node]


@dataclass
class HybridHostStats:
    """What the host tier did, per component (full, window, Mamba: tokens, tokens, states)."""

    written: list[int] = field(default_factory=lambda: [0, 0, 0])
    write_failed: int = 0  # backups refused for want of host room
    loaded: list[int] = field(default_factory=lambda: [0, 0, 0])
    load_backs: int = 0
    load_back_failed: int = 0  # load-backs the device had no room for
    demoted_tokens: int = 0  # device evictions that left the node on host
    host_evicted: list[int] = field(default_factory=lambda: [0, 0, 0])

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, list) else v for k, v in vars(self).items()}


def host_sizes(spec: HostTierSpec, device: list[int], page_size: int) -> list[int]:
    """Host pool sizes per component: full as the plain tier sizes it, the others by the
    same ratio (a Mamba host pool is ``int(states * ratio)`` plus one,
    ``pool_host/mamba.py:166-174``)."""
    full = spec.size_for(device[FULL], page_size)
    ratio = spec.ratio if spec.ratio is not None else full / max(device[FULL], 1)
    swa = spec.size_for(device[SWA], page_size) if spec.ratio is not None and device[SWA] else (
        int(device[SWA] * ratio) // page_size * page_size)  # fmt: skip
    mamba = int(device[MAMBA] * ratio) + 1 if device[MAMBA] else 0
    return [full, swa, mamba]


def check_host_spec(spec: HostTierSpec) -> None:
    """Refuse, by name, what the hybrid host tier does not model."""
    if spec.write_policy == WRITE_BACK:
        raise ValueError(
            "host tier: write_policy 'write_back' is not modelled for hybrid layouts "
            "(use write_through or write_through_selective)"
        )
    if spec.admission is not None:
        raise ValueError("host tier: admission is not modelled for hybrid layouts")


class HybridHost:
    """Host pools, host LRU lists and counters of one :class:`HybridRadixCache`."""

    def __init__(self, cache: HybridRadixCache, spec: HostTierSpec) -> None:
        check_host_spec(spec)
        self.cache = cache
        self.spec = spec
        sizes = host_sizes(spec, cache.pools.size, cache.page_size)
        if sizes[FULL] <= 0:
            raise ValueError(f"host tier: {spec.tokens} host tokens hold no whole page")
        self.pools = HybridPools(sizes[FULL], sizes[SWA], sizes[MAMBA], cache.page_size)
        self.threshold = spec.threshold
        self.load_back_threshold = spec.load_back_threshold
        self.lru = HostLRU(cache.aux if cache.aux is not None else SWA)
        score = cache.score
        if spec.policy is not None:
            from radix_evict.policies.resolve import policy_by_name

            pol = spec.policy
            if isinstance(pol, str):
                pol = policy_by_name(pol, spec.policy_config)
            score = cast(Any, pol).score
            try:
                score(cache.root)
            except AttributeError as e:
                raise ValueError(
                    f"host tier: policy {spec.policy!r} reads node.{e.name}, which the hybrid "
                    "tree does not keep"
                ) from None
        self._score: Callable[[HybridNode], Any] = score
        self.stats = HybridHostStats()
        self.leaves: set[HybridNode] = set()  # the host leaves (SGLang's evictable_host_leaves)
        # Nodes backed up during the insert under way: SGLang's ``write_through_pending_id``,
        # set at the backup's commit (``mark_write_through_pending``,
        # ``unified_tree_core.py:2753-2767``) and cleared at its ack (``:2840-2848``),
        # which here comes after the insert (the poll after each operation).
        self.in_flight: set[HybridNode] = set()

    # ------------------------------------------------------------------ amounts
    def amount(self, node: HybridNode, component: int) -> int:
        if not node.host[component]:
            return 0
        return 1 if component == MAMBA else len(node.key)

    def is_host_leaf(self, node: HybridNode) -> bool:
        """SGLang's H-leaf: host-only, backed up, unlocked, childless (``_is_host_leaf``)."""
        return (
            node is not self.cache.root
            and not node.has[FULL]
            and node.host[FULL]
            and not node.locked()
            and not node.children
        )

    def refresh(self, node: HybridNode) -> None:
        if self.is_host_leaf(node):
            self.leaves.add(node)
        else:
            self.leaves.discard(node)

    # ------------------------------------------------------------------ backup
    def hit(self, node: HybridNode) -> None:
        """An insert walked past ``node``: count it, back it up at the threshold."""
        node.hit_count += 1
        if not node.host[FULL] and node.hit_count >= self.threshold:
            self.back_up_chain(node)

    def back_up_chain(self, node: HybridNode) -> None:
        """``node`` and its unbacked ancestors, ancestors first, until one fails."""
        chain = [node]
        cur = node.parent
        while cur is not None and cur is not self.cache.root and not cur.host[FULL]:
            chain.append(cur)
            cur = cur.parent
        for n in reversed(chain):
            if not self.back_up(n):
                return

    def needs_incremental(self, node: HybridNode) -> bool:
        """A backed-up node whose window or state has no host copy yet, and whose own
        backup is not in flight: one made earlier in the same insert still awaits its ack,
        so SGLang adds none (``write_through_pending_id is None``,
        ``unified_tree_core.py:1438-1447``)."""
        if node in self.in_flight:
            return False
        if self.cache.aux == SWA:
            return bool(self._unbacked_window(node))
        return self.cache.aux == MAMBA and node.has[MAMBA] and not node.host[MAMBA]

    def _unbacked_window(self, node: HybridNode) -> list[HybridNode]:
        """Device window nodes within one window above ``node`` with no host copy
        (``_collect_unbacked_swa_nodes_in_window``); the walk stops at a bare tombstone."""
        window = self.cache.window
        assert window is not None
        covered, out = 0, []
        cur: HybridNode | None = node
        while cur is not None and cur is not self.cache.root and covered < window:
            if not (cur.has[SWA] or cur.host[SWA]):
                break
            covered += len(cur.key)
            if cur.has[SWA] and not cur.host[SWA]:
                out.append(cur)
            cur = cur.parent
        return out

    def back_up(self, node: HybridNode) -> bool:
        """Copy what ``node`` lacks on host; False (nothing copied) when a host pool is full."""
        aux = self.cache.aux
        full_n = 0 if node.host[FULL] else len(node.key)
        window = self._unbacked_window(node) if aux == SWA else []
        state = aux == MAMBA and node.has[MAMBA] and not node.host[MAMBA]
        if not full_n and not window and not state:
            return True
        need = [full_n, sum(len(n.key) for n in window), 1 if state else 0]
        short = need[FULL] - self.pools.available(FULL)
        if short > 0 and self.evict(FULL, short) < short:
            self.stats.write_failed += 1
            return False
        self.pools.alloc(FULL, need[FULL])
        c = aux if aux is not None else SWA
        if need[c] > self.pools.available(c):
            self.evict(c, need[c])  # the reclaim asks for the whole need, then one retry
        if need[c] > self.pools.available(c):
            self.pools.free(FULL, need[FULL])
            self.stats.write_failed += 1
            return False
        self.pools.alloc(c, need[c])
        for c in (FULL, SWA, MAMBA):
            self.stats.written[c] += need[c]
        node.host[FULL] = True
        for n in window:
            n.host[SWA] = True
        if state:
            node.host[MAMBA] = True
        self.in_flight.add(node)
        return True

    # ------------------------------------------------------------------ demote
    def demote(self, node: HybridNode, freed: list[int]) -> None:
        """Free a backed-up device leaf's device components; it stays in the tree on host."""
        from radix_evict.cache.hybrid.evict import release

        cache = self.cache
        assert node.host[FULL] and node in cache.leaves
        self.stats.demoted_tokens += len(node.key)
        for c in (FULL, SWA, MAMBA):
            release(cache, node, c, freed)
        if cache.aux is not None and node.host[cache.aux] and node not in self.lru:
            self.lru.insert_mru(node)
        cache.refresh_leaf(node)
        self.refresh(node)
        assert node.parent is not None
        cache.refresh_leaf(node.parent)

    def tombstoned(self, node: HybridNode, component: int) -> None:
        """A device tombstone that keeps a host copy joins the host LRU (``swa.py:729-736``)."""
        if node.host[component] and node not in self.lru:
            self.lru.insert_mru(node)

    def release_host_lock(self, node: HybridNode) -> None:
        """What the host lock a load-back holds on ``node`` leaves behind once released.

        SGLang's ``load_back`` host-locks its node (``unified_radix_cache.py:1830``) and
        releases it at once when it does not load (``:1882-1883, 1906-1907, 1919-1920``)
        or at the load's ack (``loading_check``, ``:3562-3564``). The lock takes the
        window's host copies out of the host LRU for every node of the window segment
        above ``node``, tombstones included
        (``components/swa.py:849-903``), the state's for ``node`` alone
        (``components/mamba.py:463-490``); the release puts back at the MRU end, in the
        walk's order (``node`` first, so the topmost ends most recent), each copy that is
        still host-only (``components/swa.py:905-945``, ``components/mamba.py:492-515``).
        """
        cache, aux = self.cache, self.cache.aux
        if aux == MAMBA:
            segment = [node]
        elif aux == SWA:
            assert cache.window is not None
            segment, covered, cur = [], 0, node
            while cur is not cache.root and covered < cache.window:
                segment.append(cur)
                covered += len(cur.key)
                assert cur.parent is not None
                cur = cur.parent
        else:
            return
        for n in segment:
            if n.host[aux] and not n.has[aux]:
                if n in self.lru:
                    self.lru.remove(n)
                self.lru.insert_mru(n)

    # ------------------------------------------------------------------ host eviction
    def evict(self, component: int, num: int) -> int:
        """Free at least ``num`` host slots of ``component`` where it can; return the count."""
        freed = [0, 0, 0]
        if component == FULL:
            heap = [self._entry(n) for n in self.leaves]
            heapq.heapify(heap)
            while freed[FULL] < num and heap:
                x = heapq.heappop(heap)[-1]
                if x.parent is None or not self.is_host_leaf(x):
                    continue
                parent = x.parent
                self._delete_host_leaf(x, freed)
                if parent.parent is not None and self.is_host_leaf(parent):
                    heapq.heappush(heap, self._entry(parent))
        else:
            y = self.lru.lru_unlocked()
            while freed[component] < num and y is not None:
                nxt = self.lru.prev_unlocked(y)
                if self.is_host_leaf(y):
                    self._delete_host_leaf(y, freed)
                else:
                    self.drop_copy(y, component, freed)
                y = nxt if nxt is None or nxt in self.lru else self.lru.lru_unlocked()
        for c in (FULL, SWA, MAMBA):
            self.stats.host_evicted[c] += freed[c]
        return freed[component]

    def _entry(self, node: HybridNode) -> tuple[Any, float, int, HybridNode]:
        return (self._score(node), node.last_access_time, node.id, node)

    def drop_copy(self, node: HybridNode, component: int, freed: list[int]) -> None:
        n = self.amount(node, component)
        if n:
            self.pools.free(component, n)
            freed[component] += n
            node.host[component] = False
        if component != FULL and node in self.lru:
            self.lru.remove(node)

    def _delete_host_leaf(self, node: HybridNode, freed: list[int]) -> None:
        """Delete a host leaf, then its childless ancestors left with no full KV on either
        tier (``_evict_host_leaf``, ``_iteratively_delete_tombstone_ancestors``)."""
        cache = self.cache
        cur = node
        while True:
            parent = cur.parent
            assert parent is not None and not cur.children and not cur.has[FULL]
            for c in (FULL, SWA, MAMBA):
                self.drop_copy(cur, c, freed)
            del parent.children[cache._child_key(cur.key)]
            cur.parent = None
            self.leaves.discard(cur)
            cache.refresh_leaf(parent)
            self.refresh(parent)
            if parent is cache.root or parent.children or parent.locked():
                return
            if parent.has[FULL] or parent.host[FULL]:
                return
            cur = parent

    # ------------------------------------------------------------------ checks
    def check(self) -> None:
        """Host pools against the nodes' host copies, the host LRU against host-only copies."""
        cache = self.cache
        nodes = [n for n in cache.nodes() if n is not cache.root]
        for c in (FULL, SWA, MAMBA):
            held = sum(self.amount(n, c) for n in nodes)
            if held != self.pools.size[c] - self.pools.free_count[c]:
                raise AssertionError(
                    f"host component {c}: nodes hold {held}, host pool says "
                    f"{self.pools.size[c] - self.pools.free_count[c]} used"
                )
        for n in nodes:
            if not (n.has[FULL] or n.host[FULL]):
                raise AssertionError(f"{n}: no full KV on either tier")
            if (n.has[SWA] or n.has[MAMBA]) and not n.has[FULL]:
                raise AssertionError(f"{n}: auxiliary device data without full KV")
            assert n.parent is not None
            if n.has[FULL] and not n.parent.has[FULL]:
                raise AssertionError(f"{n}: on device below a host-only parent")
            if n.host[FULL] and n.parent is not cache.root and not n.parent.host[FULL]:
                raise AssertionError(f"{n}: backed up below an unbacked parent")
        if {n for n in nodes if self.is_host_leaf(n)} != self.leaves:
            raise AssertionError("the host-leaf set disagrees with the tree")
        aux = cache.aux
        expect = {n for n in nodes if aux is not None and n.host[aux] and not n.has[aux]}
        if expect != set(self.lru.order()):
            raise AssertionError("the host LRU disagrees with the host-only auxiliary copies")
