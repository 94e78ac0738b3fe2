"""The radix prefix cache over a KV slot pool.

Behaviour follows SGLang 0.5.23's unified radix tree (see the project's
semantics page): page-aligned keys, splits on page boundaries, recency stamps
from a logical clock, the hit_count rule with ``inserted_len``, max-propagated
priority, T-LRU lengths, and duplicate-slot freeing in ``insert``. Every
argument is checked before anything changes, so a call that raises leaves
the tree, the sizes and the pool as they were.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final, NamedTuple, SupportsIndex

import torch
from mypy_extensions import mypyc_attr

from radix_evict.cache.args import check_int
from radix_evict.cache.eviction import EvictionDriver, is_evictable_leaf
from radix_evict.cache.host_tier import HostTier, HostTierSpec, merged_hooks
from radix_evict.cache.pool import Allocator
from radix_evict.cache.radix_tree import InsertChange, RadixTree
from radix_evict.cache.slots import SlotStorage
from radix_evict.cache.stats import CacheStats
from radix_evict.cache.tree import (
    TOKEN_BYTES,
    SplitRecord,
    TokenKey,
    TreeNode,
    as_token_array,
    common_prefix_len,
    find_child,
    key_view,
)
from radix_evict.policies.contract import (
    DEFAULT_POLICY,
    EvictionPolicy,
    PolicyConfig,
    callbacks_of,
)
from radix_evict.policies.resolve import policy_by_name, policy_origin

# Read once: a compiled module reads a Final from a C global, not through ``time``'s dict.
_PERF_COUNTER: Final = time.perf_counter


def _pool_tokens(pool: Allocator) -> int:
    """The device pool's size in tokens (what a host tier's ratio multiplies)."""
    size = getattr(pool, "size", None)
    return size if type(size) is int else int(pool.available_size())


class MatchResult(NamedTuple):
    """What ``match_prefix`` found: the cached prefix and the node to lock.

    With a host tier, ``host_len`` more tokens are cached on host only, down
    to ``host_node``: :meth:`RadixCache.load_back` brings them to the device.
    """

    prefix_len: int
    indices: torch.Tensor
    last_node: TreeNode
    host_len: int = 0
    host_node: TreeNode | None = None


_TUPLE_NEW: Final = tuple.__new__


def _device_match(prefix_len: int, indices: torch.Tensor, last_node: TreeNode) -> MatchResult:
    """``MatchResult(prefix_len, indices, last_node)``, built without the interpreted
    ``__new__`` a NamedTuple class has (a third of a microsecond on every match)."""
    return _TUPLE_NEW(MatchResult, (prefix_len, indices, last_node, 0, None))


@mypyc_attr(allow_interpreted_subclasses=True)  # engines and tests subclass it
class RadixCache(RadixTree):
    """A radix tree of token prefixes whose nodes own KV slots of ``pool``.

    ``policy`` is a registered policy name (validated with ``policy_config``
    before anything else happens) or an :class:`EvictionPolicy` instance.
    ``policy_config`` is None, a dict, a JSON string, or an instance of the
    policy's own config model, used as it is (a validated, frozen object, so
    one can serve many caches); another model's instance is an error.

    Single-threaded, like each SGLang scheduler's tree: one operation at a
    time. ``match_prefix``, ``insert``, ``evict``, ``inc_lock_ref``,
    ``dec_lock_ref`` and ``reset`` refuse to start while another is running
    on this cache: from another thread with :class:`~radix_evict.errors.CacheBusyError`,
    from the policy itself (a ``score()`` or callback calling back in) with
    :class:`~radix_evict.errors.PolicyError`; the refused call changes nothing and
    the running one completes (or, for a policy's re-entry, is undone). Serialise
    calls with a lock, or give each thread its own cache, to share one across threads.
    """

    def __init__(
        self,
        pool: Allocator,
        page_size: SupportsIndex | None = None,
        policy: str | EvictionPolicy | Any = DEFAULT_POLICY,
        policy_config: Mapping[str, Any] | str | PolicyConfig | Any = None,
        host_tier: HostTierSpec | None = None,
    ) -> None:
        # policy and policy_config are checked here, not by annotations, so that a
        # compiled build raises what the interpreted one does (PolicyConfigError).
        if isinstance(policy, EvictionPolicy):
            if policy_config is not None:
                raise ValueError("policy_config is only for a policy given by name")
            self.policy = policy
        else:
            self.policy = policy_by_name(policy, policy_config)
        for attr in ("alloc", "free", "available_size", "device", "page_size"):
            if not hasattr(pool, attr):
                raise TypeError(
                    f"pool has no {attr!r}: it must provide alloc, free, "
                    "available_size, device and page_size"
                )
        pool_page = int(pool.page_size)
        if page_size is not None and check_int("page_size", page_size, 1) != pool_page:
            raise ValueError(f"page_size {page_size} differs from the pool's page_size {pool_page}")
        self.pool = pool
        slots = SlotStorage(pool)
        self._slot_device = slots.slot_device
        self.device = self._slot_device.device
        self.stats = CacheStats()
        self._empty = torch.empty((0,), dtype=torch.int64, device=self.device)
        source, distribution = policy_origin(self.policy)
        driver = EvictionDriver(self.policy, pool_page, source, distribution)
        # The host tier (SGLang's HiCache), if any: host_tier.py holds its pool, its driver
        # and what it does to the tree's host-only nodes.
        if host_tier is not None and not isinstance(host_tier, HostTierSpec):
            raise TypeError(
                f"host_tier must be a HostTierSpec or None, got {type(host_tier).__name__}"
            )
        host = (
            HostTier(host_tier, slots, _pool_tokens(pool), self.policy)
            if host_tier is not None
            else None
        )
        hooks = callbacks_of(self.policy)
        if host is not None and host.policy is not self.policy:
            hooks = merged_hooks(hooks, host.policy)
        RadixTree.__init__(self, slots, driver, host, hooks)

    # ------------------------------------------------------------------ match
    def match_prefix(self, tokens: TokenKey, context: Any = None) -> MatchResult:
        """The longest cached page-aligned prefix of ``tokens``; stamps its path as used.

        ``context`` (a :class:`~radix_evict.cache.context.RequestContext`) is
        recorded on the matched path's nodes before the policy hears of the hit.
        """
        self._enter("match_prefix")
        try:
            return self._match_prefix(tokens, context)
        finally:
            self._busy = 0

    def _match_prefix(self, tokens: TokenKey, context: Any = None) -> MatchResult:
        arr = as_token_array(tokens)
        P = self.page_size
        n = len(arr) // P * P
        root = self._root
        if not n:
            st = self.stats
            st.match_calls += 1
            st.queried_tokens += len(arr)
            return _device_match(0, self._empty, root)  # an empty key is no use: no stamp
        clock0 = self._clock
        root_time = root.last_access_time
        path: list[TreeNode] = []
        split: SplitRecord | None = None
        times: list[float] | None = None
        contexts: list[object] | None = None
        off = 0
        try:
            kv = key_view(arr, n)
            nb = n * TOKEN_BYTES
            pb = P * TOKEN_BYTES
            few = self._scan_children
            node = root
            while off < nb:
                child, first = find_child(node.children, kv, off, pb, few)
                if child is None:
                    break
                ck = child.key_bytes
                end = off + len(ck)
                if end <= nb and ck.startswith(kv[off:end]):
                    path.append(child)
                    node = child
                    off = end
                    continue
                m = common_prefix_len(ck, kv, off) // P * P
                split = SplitRecord(child)
                node = self._split(child, m, first)
                path.append(node)
                off += m * TOKEN_BYTES
                break
            dev = len(path)  # the device-resident nodes; host-only ones follow
            host = self._host
            if host is not None and split is None and off < nb:
                off, inside, m = host.walk(node, kv, off, nb, path)
                if inside is not None:  # the key ends inside a host-only node: split it
                    split = SplitRecord(inside)
                    path.append(self._split(inside, m))
                    off += m * TOKEN_BYTES
            # The one node whose score may change: the tail of a split, else the last node.
            if dev < len(path):
                offered = path[dev - 1] if dev else None
            else:
                offered = split.node if split is not None else (path[-1] if path else None)
            if offered is not None and not is_evictable_leaf(offered):
                offered = None
            on_hit = self._on_hit
            if offered is not None or on_hit is not None or dev < len(path):
                times = [x.last_access_time for x in path]  # for the undo below
            if context is not None:
                contexts = [x.context for x in path]
                for x in path:
                    x.context = context
            self._stamp(path)
            if on_hit is not None:
                for x in path:
                    on_hit(x)
            if offered is not None:
                self._driver.offer(offered)
            if host is not None and dev < len(path):
                host.offer(path[-1], split.node if split is not None else None)
        except BaseException:
            if times is not None:
                for x, t in zip(path, times, strict=True):
                    x.last_access_time = t
            if contexts is not None:
                for x, c in zip(path, contexts, strict=True):
                    x.context = c
            root.last_access_time = root_time
            if split is not None and split.node.parent is not None:
                self._unsplit(split)
            self._clock = clock0
            raise
        st = self.stats
        st.match_calls += 1
        st.queried_tokens += len(arr)
        if not path:
            return _device_match(0, self._empty, root)
        if dev < len(path):
            return self._host_match_result(path, dev)
        hit = off // TOKEN_BYTES
        st.hit_tokens += hit
        indices = self._slots.to_tensor([x.value for x in path])
        return _device_match(hit, indices, path[-1])

    def _host_match_result(self, path: list[TreeNode], dev: int) -> MatchResult:
        """A match that went on into host-only nodes: device prefix, plus what is on host."""
        host = self._host
        assert host is not None
        hit = path[dev - 1].prefix_len if dev else 0
        host_len = path[-1].prefix_len - hit
        self.stats.hit_tokens += hit
        host.stats.matched_tokens += host_len
        if dev:
            indices = self._slots.to_tensor([x.value for x in path[:dev]])
            return MatchResult(hit, indices, path[dev - 1], host_len, path[-1])
        return MatchResult(0, self._empty, self._root, host_len, path[-1])

    # ----------------------------------------------------------------- insert
    def insert(
        self,
        tokens: TokenKey,
        indices: torch.Tensor,
        priority: SupportsIndex | None = 0,
        prev_prefix_len: SupportsIndex = 0,
        inserted_len: SupportsIndex = 0,
        context: Any = None,
    ) -> int:
        """Cache ``tokens`` whose KV sits in ``indices``; return tokens already cached.

        The cache takes the page-aligned slots it keeps and frees
        ``indices[prev_prefix_len:matched]`` itself: that KV duplicates what the
        tree already holds. Slots past the page-aligned length stay the caller's.
        ``context`` (a :class:`~radix_evict.cache.context.RequestContext`) is
        recorded on every node the insert walks or creates.
        """
        self._enter("insert")
        try:
            return self._insert(tokens, indices, priority, prev_prefix_len, inserted_len,
                                context)
        finally:
            self._busy = 0

    def _insert(
        self,
        tokens: TokenKey,
        indices: torch.Tensor,
        priority: SupportsIndex | None,
        prev_prefix_len: SupportsIndex,
        inserted_len: SupportsIndex,
        context: Any = None,
    ) -> int:
        arr = as_token_array(tokens)
        L = len(arr)
        if L == 0:
            raise ValueError("insert: empty key (nothing to cache)")
        # The slots as the pool computes with them; not converted when prev_prefix_len
        # covers the whole key (the prompt-boundary insert): then none of them is read
        # unless the walk finds that prefix gone.
        if type(prev_prefix_len) is int and prev_prefix_len >= L:
            self._slot_device.check("indices", indices, L)
            idx: Any = None
        else:
            idx = self._slot_device.host_array("indices", indices, L)
        prio = (
            priority
            if type(priority) is int
            else (0 if priority is None else check_int("priority", priority))
        )
        prev = check_int("prev_prefix_len", prev_prefix_len, 0)
        if prev > L:
            raise ValueError(f"prev_prefix_len {prev} exceeds the key length {L}")
        done = check_int("inserted_len", inserted_len, 0)
        P = self.page_size
        n = L // P * P
        # indices[:prev] is the caller's locked prefix, the tree's own slots: never read.
        # The rest is checked to be the caller's before anything changes.
        lo = min(prev, n) // P * P
        claimed = self._slots.claim(idx, lo, n)
        if n == 0:
            self.stats.insert_calls += 1
            self._clock += 1
            self._root.last_access_time = self._clock
            return 0
        kv = key_view(arr, n)
        # Walk first, changing nothing: how much is cached decides which slots are taken.
        walk = self._walk_for_insert(kv, n)
        path = walk.path
        matched = walk.off // TOKEN_BYTES
        # Host-only nodes (a suffix of the path) take the new KV; the rest is on device.
        dev = len(path)
        while dev and path[dev - 1].value is None:
            dev -= 1
        on_device = matched if dev == len(path) else (path[dev - 1].prefix_len if dev else 0)
        if on_device < lo:
            # The caller's prefix was not all cached (it was not kept locked): the new
            # leaf takes slots from indices[:prev] too, so they need the same check.
            if idx is None:
                idx = self._slot_device.host_array("indices", indices, L)
            claimed = self._slots.claim(idx, on_device, n)
            lo = on_device
        change = InsertChange(self._clock, self._root.last_access_time)
        try:
            self._apply_insert(walk, change, kv, n, dev, claimed, lo, prio, done, context)
        except BaseException:
            self._undo_insert(change)
            raise
        # Committed: the pool's owners and the counts follow.
        st = self.stats
        st.insert_calls += 1
        if change.leaf is not None:
            self._slots.adopt(change.leaf.value)
            self._evictable += n - matched
            self._num_nodes += 1
            st.inserted_tokens += n - matched
        if change.unevicted:
            host = self._host
            assert host is not None
            self._evictable += host.adopt_unevicted(change.unevicted)
        self._clock = change.clock
        if on_device > lo:
            self._slots.free_claimed(claimed[: (on_device - lo) // P])
            st.duplicate_tokens_freed += on_device - lo
        return matched

    # ------------------------------------------------------------------ locks
    # Node arguments are annotated ``TreeNode | Any`` and checked here, so that a
    # compiled build raises the interpreted build's error for a non-node.
    def inc_lock_ref(self, node: TreeNode | Any) -> None:
        """Protect ``node`` and its ancestors from eviction."""
        self._enter("inc_lock_ref")
        try:
            self._inc_lock_ref(node)
        finally:
            self._busy = 0

    def dec_lock_ref(self, node: TreeNode | Any) -> None:
        """Undo one ``inc_lock_ref(node)``."""
        self._enter("dec_lock_ref")
        try:
            self._dec_lock_ref(node)
        finally:
            self._busy = 0

    # ------------------------------------------------------------------ evict
    def evict(self, num_tokens: SupportsIndex) -> int:
        """Free at least ``num_tokens`` tokens of unlocked KV, lowest score first.

        Whole nodes go, so the total may overshoot; it falls short only when
        nothing evictable is left. Returns the tokens freed.
        """
        self._enter("evict")
        try:
            return self._evict(num_tokens)
        finally:
            self._busy = 0

    def _evict(self, num_tokens: SupportsIndex) -> int:
        want = check_int("num_tokens", num_tokens, 1)
        t0 = _PERF_COUNTER()
        host = self._host
        driver = self._driver
        victims = driver.evict(want) if host is None else host.evict_device(driver, want)
        freed = 0
        if victims:
            values = []
            empty = self._slots.empty
            gone = 0
            for node in victims:
                freed += node.num_tokens
                if node.value is not None:  # (None: demoted to host, settled below)
                    values.append(node.value)
                    node.value = empty  # its slots are the pool's again: node_slots shows none
                    gone += 1
            if gone < len(victims):
                assert host is not None
                values.extend(host.settle_demotions())
            self._evictable -= freed
            self._num_nodes -= gone
            self._slots.release(values)
        st = self.stats
        st.evict_calls += 1
        st.evicted_tokens += freed
        st.evicted_nodes += len(victims)
        st.eviction_seconds += _PERF_COUNTER() - t0
        return freed

    def load_back(self, node: TreeNode | Any) -> torch.Tensor | None:
        """Bring host-only ``node`` and its host-only ancestors back to the device.

        ``node`` is a match's ``host_node``. Device slots are allocated for the
        host-only path (evicting device KV for room, the path's device end
        locked meanwhile and the path pinned on host); returns them, in path
        order, or None, changing nothing, when the device has no room or the
        host part is shorter than the tier's ``load_back_threshold``. The
        loaded nodes are on both tiers; lock ``node`` to keep them.
        """
        self._enter("load_back")
        try:
            return self._load_back(node)
        finally:
            self._busy = 0

    def _load_back(self, node: TreeNode | Any) -> torch.Tensor | None:
        host = self._host
        if host is None:
            raise ValueError("load_back: this cache has no host tier")
        if type(node) is not TreeNode and not isinstance(node, TreeNode):
            raise self._foreign_node("load_back", node)
        if node.value is not None:
            raise ValueError("load_back: node is on device already (nothing to load)")
        path: list[TreeNode] = []
        x: TreeNode | None = node
        while x is not None and x.value is None:
            path.append(x)
            x = x.parent
        if x is None or node.parent is None:
            raise self._foreign_node("load_back", node)
        anchor = x  # the device-resident end of the path
        path.reverse()
        tokens = sum(y.num_tokens for y in path)
        st = host.stats
        if tokens < host.load_back_threshold:
            return None
        short = tokens - self.pool.available_size()
        if short > 0:
            for y in path:
                y.host_lock_ref += 1
            self._inc_lock_ref(anchor)
            try:
                self._evict(short)
            finally:
                self._dec_lock_ref(anchor)
                for y in path:
                    y.host_lock_ref -= 1
        new = self.pool.alloc(tokens) if self.pool.available_size() >= tokens else None
        if new is None:
            st.load_back_failed_tokens += tokens
            host.offer(node)
            return None
        claimed = self._slots.claim(self._slot_device.host_array("load_back", new), 0, tokens)
        parent = anchor
        lo = anchor.prefix_len
        for y in path:
            host.unevict(parent, y, claimed, lo)
            parent = y
        self._evictable += host.adopt_unevicted(path, register=False)
        for y in reversed(path):  # SGLang's load ack registers from the anchor up (2735-2751)
            host.note_duplicate(y)
        host.stats.unevicted_tokens -= tokens  # counted as loaded, not as given fresh KV
        st.loaded_tokens += tokens
        st.load_back_calls += 1
        self._driver.offer(node)
        return new

    def evict_host(self, num_tokens: SupportsIndex) -> int:
        """Free at least ``num_tokens`` tokens of host-only KV, lowest host score first."""
        host = self._host
        if host is None:
            raise ValueError("evict_host: this cache has no host tier")
        want = check_int("num_tokens", num_tokens, 1)
        self._enter("evict_host")
        try:
            return host.evict(want)
        finally:
            self._busy = 0

    def host_evictable_leaves(self) -> list[TreeNode]:
        """The host-only nodes the host tier may evict next (empty without a host tier)."""
        return self._host.candidates() if self._host is not None else []

    # ------------------------------------------------------------------ reset
    def reset(self) -> None:
        """Free every slot the tree holds. An error while any node is locked."""
        self._enter("reset")
        try:
            self._reset()
        finally:
            self._busy = 0

    def _reset(self) -> None:
        if self._protected:
            raise RuntimeError(f"reset: {self._protected} tokens are locked; unlock them first")
        nodes = self.iter_nodes()
        values = [x.value for x in nodes if x.value is not None]
        if values:
            self._slots.release(values)  # first: if the pool refuses, the tree is as it was
        P = self.page_size
        self.stats.reset_tokens += sum(len(v) for v in values) * P
        host = self._host
        if host is not None:
            copies = [x.host_value for x in nodes if x.host_value is not None]
            if copies:
                host.pool.release_pages(copies)
            host.stats.reset_held_tokens += sum(len(c) for c in copies) * P
            host.stats.reset_host_only_tokens += host.host_only_tokens
            host.reset()
        empty = self._slots.empty
        for x in nodes:  # detached and empty, as an evicted node is
            x.parent = None
            x.value = empty
            x.host_value = None
            x.host_children = None
        self._init_tree()
        self._driver.clear()

    def node_slots(self, node: TreeNode | Any) -> torch.Tensor:
        """The KV slots ``node`` holds, one per token (nodes store one entry per page).

        Empty for the root and for a node that was evicted or reset away: its
        old slots are the pool's again, perhaps already someone else's.
        """
        if type(node) is not TreeNode and not isinstance(node, TreeNode):
            raise self._foreign_node("node_slots", node)
        if node is self._root or node.parent is None or node.value is None:
            return self._empty  # (a host-only node's KV is on host: host_tier.pool's pages)
        return self._slots.to_tensor([node.value])

    def __repr__(self) -> str:
        return (
            f"RadixCache(policy={self.policy!r}, page_size={self.page_size}, "
            f"nodes={self._num_nodes}, evictable={self._evictable}, protected={self._protected})"
        )
