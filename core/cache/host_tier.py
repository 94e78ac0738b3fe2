"""The host tier: SGLang's hierarchical cache (HiCache) behind the device tree.

A host tier is a second KV pool in host memory. Nodes are copied to it (a
*backup*) on insert once their hit count reaches the write policy's
threshold (``write_through``: 1, ``write_through_selective``: 2), or, under
``write_back``, when the device evicts them. A device eviction of a backed-up
node frees only its device KV: the node stays in the tree, host-only, and a
later match that reaches it can load it back. The host pool evicts too, its
own leaves (host-only nodes with no children), ranked by any registered
policy. docs/hicache.md gives the rules with worked examples and their
sources in SGLang 0.5.23.

Transfers complete inside the cache operation that starts them: the model
tracks where every token's KV is, not when the copy lands (the timed replay
charges the transfer's time from its bandwidth instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from radix_evict.cache.admission import AdmissionPolicy, admission_policy
from radix_evict.cache.args import check_int
from radix_evict.cache.eviction import EvictionDriver, is_evictable_leaf
from radix_evict.cache.pool import KVPool
from radix_evict.cache.slots import SlotStorage
from radix_evict.cache.tree import TOKEN_BYTES, TreeNode, common_prefix_len, find_child
from radix_evict.policies.contract import Callbacks, EvictionPolicy, callbacks_of
from radix_evict.policies.resolve import policy_by_name, policy_origin

WRITE_THROUGH = "write_through"
WRITE_THROUGH_SELECTIVE = "write_through_selective"
WRITE_BACK = "write_back"
WRITE_POLICIES = (WRITE_THROUGH, WRITE_THROUGH_SELECTIVE, WRITE_BACK)
DEFAULT_WRITE_POLICY = WRITE_THROUGH
# The hit count at which an insert backs a node up, per write policy (write_back: never).
WRITE_THRESHOLDS = {WRITE_THROUGH: 1, WRITE_THROUGH_SELECTIVE: 2}
DEFAULT_LOAD_BACK_THRESHOLD = 10  # a host hit shorter than this is not worth a transfer
DEFAULT_HICACHE_RATIO = 2.0  # SGLang's --hicache-ratio default


def host_tokens_for_ratio(device_tokens: int, ratio: float, page_size: int) -> int:
    """The host pool SGLang 0.5.23 sizes from ``--hicache-ratio``: one page more than the ratio's.

    ``floor(device_tokens * ratio)`` rounded down to pages, plus a page
    (docs/hicache.md, "Capacity").
    """
    P = check_int("page_size", page_size, 1)
    if not ratio > 0:
        raise ValueError(f"host tier: hicache ratio {ratio!r} must be a number above 0")
    raw = int(device_tokens * ratio)
    return (raw // P + 1) * P


@dataclass(frozen=True)
class HostTierSpec:
    """How large the host tier is, when it is written, and how it evicts.

    Give ``tokens`` (rounded down to whole pages) or ``ratio``: SGLang's
    ``--hicache-ratio``, the host sized from the device pool as SGLang sizes
    it (:func:`host_tokens_for_ratio`). ``write_threshold`` None takes the
    write policy's (1 or 2);
    ``policy``/``policy_config`` rank the host tier's eviction candidates like
    any device policy (None: the device policy itself, as SGLang does).
    ``load_back_threshold``: a host hit of fewer tokens is not loaded back.
    ``admission`` (a name of :data:`~radix_evict.cache.admission.ADMISSION_POLICIES`
    with keyword ``admission_config``, or an object): asked before each backup the
    write policy would write (:mod:`radix_evict.cache.admission`); None asks nothing.
    """

    tokens: int | None = None
    ratio: float | None = None
    write_policy: str = DEFAULT_WRITE_POLICY
    write_threshold: int | None = None
    policy: str | EvictionPolicy[Any] | None = None
    policy_config: Any = None
    load_back_threshold: int = DEFAULT_LOAD_BACK_THRESHOLD
    admission: str | AdmissionPolicy | None = None
    admission_config: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.tokens is None) == (self.ratio is None):
            raise ValueError("host tier: give its size as tokens or as a ratio (one of them)")
        if self.tokens is not None:
            check_int("host tier: tokens", self.tokens, 0)
        else:
            r = self.ratio
            if isinstance(r, bool) or not isinstance(r, (int, float)) or not r > 0:
                raise ValueError(f"host tier: ratio {r!r} must be a number above 0")
        if self.write_policy not in WRITE_POLICIES:
            raise ValueError(
                f"host tier: write_policy {self.write_policy!r} is not one of "
                f"{', '.join(WRITE_POLICIES)}"
            )
        if self.write_threshold is not None:
            check_int("host tier: write_threshold", self.write_threshold, 1)
            if self.write_policy == WRITE_BACK:
                raise ValueError(
                    "host tier: write_threshold is for write_through and "
                    "write_through_selective (write_back writes on device eviction)"
                )
        check_int("host tier: load_back_threshold", self.load_back_threshold, 0)
        if isinstance(self.admission, str):
            admission_policy(self.admission, self.admission_config)  # a bad name or key: now

    def size_for(self, device_tokens: int, page_size: int) -> int:
        """Host tokens for a device pool of ``device_tokens`` (whole pages)."""
        if self.tokens is not None:
            return self.tokens // page_size * page_size
        assert self.ratio is not None
        return host_tokens_for_ratio(device_tokens, self.ratio, page_size)

    @property
    def threshold(self) -> int:
        """The hit count that triggers a backup on insert (0: never, write_back)."""
        if self.write_policy == WRITE_BACK:
            return 0
        if self.write_threshold is not None:
            return self.write_threshold
        return WRITE_THRESHOLDS[self.write_policy]


@dataclass
class HostStats:
    """What the host tier did, in tokens (nodes where named)."""

    written_tokens: int = 0  # device -> host copies (backups)
    write_failed_tokens: int = 0  # backups the full host tier could not take
    loaded_tokens: int = 0  # host -> device copies (load-backs)
    load_back_calls: int = 0
    load_back_failed_tokens: int = 0  # load-backs the device had no room for
    matched_tokens: int = 0  # found on host (not on device) by match_prefix
    demoted_tokens: int = 0  # device evictions that left a host copy
    evicted_tokens: int = 0  # host-only KV evicted from the host tier (gone from both)
    evicted_nodes: int = 0
    reclaimed_tokens: int = 0  # host copies of device-resident nodes freed (write_back)
    dropped_tokens: int = 0  # host-only KV dropped with an unbacked device parent
    unevicted_tokens: int = 0  # host-only nodes given fresh device KV by an insert
    reset_host_only_tokens: int = 0  # host-only KV freed by the cache's ``reset``
    reset_held_tokens: int = 0  # host copies (of either kind) freed by ``reset``
    extra: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, int]:
        d = {k: v for k, v in vars(self).items() if k != "extra"}
        d.update(self.extra)
        return d


class HostTier:
    """The host pool, its eviction driver and counters, and the tree's host-only nodes.

    The cache calls it at a few points of its operations (a match that runs
    past the device tree, an insert that reaches host-only nodes, a device
    eviction, a load-back); everything the host tier does to the tree happens
    here. Host page entries are page ids of :attr:`pool` (a cpu
    :class:`KVPool` whose owner table checks every host page's transfers, as
    the device pool's does).
    """

    def __init__(
        self,
        spec: HostTierSpec,
        slots: SlotStorage,
        device_tokens: int,
        device_policy: EvictionPolicy[Any],
    ) -> None:
        self.slots = slots  # the device's: host-only nodes given device KV take entries here
        page_size = slots.page_size
        P = page_size
        tokens = spec.size_for(device_tokens, P)
        if tokens <= 0:
            raise ValueError(
                f"host tier: {spec.tokens} tokens hold no whole page of {P} (a host tier of "
                "size 0 is no host tier: pass host_tier=None)"
            )
        self.spec = spec
        self.page_size = P
        self.size = tokens
        self.pool = KVPool(size=tokens, page_size=P, device="cpu", layers=0)
        if spec.policy is None or isinstance(spec.policy, EvictionPolicy):
            if spec.policy_config is not None:
                raise ValueError("host tier: policy_config is only for a policy given by name")
            self.policy: EvictionPolicy[Any] = (
                device_policy if spec.policy is None else spec.policy
            )
        else:
            self.policy = policy_by_name(spec.policy, spec.policy_config)
        source, distribution = policy_origin(self.policy)
        self.driver = EvictionDriver(self.policy, P, source, distribution, host_tier=True)
        self.write_policy = spec.write_policy
        self.write_back = spec.write_policy == WRITE_BACK
        self.threshold = spec.threshold
        self.load_back_threshold = spec.load_back_threshold
        # Asked before each backup (None: nothing asked, the write policy alone decides).
        self.admission: AdmissionPolicy | None = admission_policy(spec.admission,
                                                                  spec.admission_config)
        self.stats = HostStats()
        self.host_only_tokens = 0  # tokens whose KV is on host only
        self.removed_nodes = 0  # host-only nodes that left the tree here (the cache's count)
        self.journal: list[TreeNode] | None = None  # while set, back_up lists what it wrote
        # Nodes on both tiers, in the order they got there: write_back reclaims their host
        # copies first under host pressure (SGLang keeps such a registry; entries may go stale).
        self._duplicates: dict[int, TreeNode] = {}
        self._demoted: list[tuple[TreeNode, Any]] = []  # a device eviction's, to settle

    # ------------------------------------------------------------------ sizes
    def used_tokens(self) -> int:
        """Host tokens held by nodes (host-only and backed-up device nodes)."""
        return self.size - self.pool.available_size()

    def available_size(self) -> int:
        return self.pool.available_size()

    # ------------------------------------------------------------------ writes
    def back_up_chain(self, node: TreeNode) -> None:
        """Write-through: back up ``node`` and its un-backed ancestors, ancestors first.

        Stops at the first that does not fit (the rest stay un-backed, as in SGLang).
        """
        chain = [node]
        x = node.parent
        while x is not None and x.parent is not None and x.host_value is None:
            chain.append(x)
            x = x.parent
        for y in reversed(chain):
            if y.host_value is None and not self.back_up(y):
                return

    def back_up(self, node: TreeNode) -> bool:
        """Copy ``node``'s KV to host, evicting host leaves for room; False if none is left."""
        n = node.num_tokens
        short = n - self.pool.available_size()
        if short > 0:
            self.evict(short)
        pages = self.pool.take_pages(n // self.page_size)
        if pages is None:
            self.stats.write_failed_tokens += n
            return False
        node.host_value = pages
        self.stats.written_tokens += n
        if self.journal is not None:
            self.journal.append(node)
        return True

    def note_duplicate(self, node: TreeNode) -> None:
        """``node`` is on both tiers now (loaded back, or given fresh device KV)."""
        if self.write_back:
            self._duplicates[id(node)] = node

    def free_copy(self, node: TreeNode) -> int:
        """Release ``node``'s host copy; return its tokens."""
        hv = node.host_value
        if hv is None:
            return 0
        node.host_value = None
        self.pool.release_pages([hv])
        self._duplicates.pop(id(node), None)
        return node.num_tokens

    # ------------------------------------------------------------------ eviction
    def evict(self, num_tokens: int) -> int:
        """Free at least ``num_tokens`` host tokens, lowest score first; return tokens freed.

        Under write_back, host copies of device-resident nodes go first (their
        KV is still on device), sparing nodes about to be demoted (device
        leaves) on a first pass.
        """
        freed = 0
        if self.write_back and self._duplicates:
            freed = self._reclaim_duplicates(num_tokens)
        if freed < num_tokens:
            victims = self.driver.evict(num_tokens - freed)
            parts = []
            for node in victims:
                parts.append(node.host_value)
                node.host_value = None
                freed += node.num_tokens
                self.stats.evicted_tokens += node.num_tokens
            self.stats.evicted_nodes += len(victims)
            self.host_only_tokens -= sum(x.num_tokens for x in victims)
            if parts:
                self.pool.release_pages(parts)
            self.removed_nodes += len(victims)
        return freed

    def _reclaim_duplicates(self, num_tokens: int) -> int:
        freed = 0
        for spare_device_leaves in (True, False):
            for key, node in list(self._duplicates.items()):
                if freed >= num_tokens:
                    return freed
                if node.value is None or node.host_value is None or node.parent is None:
                    del self._duplicates[key]  # stale: no longer on both tiers
                    continue
                if node.host_lock_ref or (spare_device_leaves and is_evictable_leaf(node)):
                    continue
                n = self.free_copy(node)
                freed += n
                self.stats.reclaimed_tokens += n
        return freed

    def drop_host_subtree(self, node: TreeNode) -> int:
        """Free the host-only descendants of a node leaving both tiers; return their tokens."""
        hc = node.host_children
        if not hc:
            return 0
        stack = list(hc.values())
        node.host_children = None
        parts = []
        tokens = 0
        count = 0
        while stack:
            x = stack.pop()
            if x.host_children:
                stack.extend(x.host_children.values())
                x.host_children = None
            parts.append(x.host_value)
            x.host_value = None
            x.parent = None
            x._heap_seq = -1
            tokens += x.num_tokens
            count += 1
        self.pool.release_pages(parts)
        self.host_only_tokens -= tokens
        self.stats.dropped_tokens += tokens
        self.removed_nodes += count
        return tokens

    def offer(self, node: TreeNode, tail: TreeNode | None = None) -> None:
        """(Re-)score ``node`` (and a split's ``tail``) for host eviction if host leaves."""
        self.driver.offer(node, tail)

    # ------------------------------------------------------------------ the tree's side
    def walk(
        self, node: TreeNode, kv: memoryview, off: int, nb: int, path: list[TreeNode]
    ) -> tuple[int, TreeNode | None, int]:
        """Continue a match past the device tree, into ``node``'s host-only subtree.

        Appends the host-only nodes matched whole to ``path``; returns the new
        byte offset, and the node the key ends inside with the tokens it shares
        (the cache splits it there), or None and 0.
        """
        P = self.page_size
        pb = P * TOKEN_BYTES
        hc = node.host_children
        while hc and off < nb:
            child = find_child(hc, kv, off, pb, 0)[0]  # (host-only children: by the dict)
            if child is None:
                break
            ck = child.key_bytes
            end = off + len(ck)
            if end <= nb and ck.startswith(kv[off:end]):
                path.append(child)
                hc = child.host_children
                off = end
                continue
            return off, child, common_prefix_len(ck, kv, off) // P * P
        return off, None, 0

    def unevict(self, parent: TreeNode, node: TreeNode, claimed: Any, lo: int) -> None:
        """Give host-only ``node`` fresh device KV from ``claimed``: it is on both tiers again."""
        end = node.prefix_len
        node.value = self.slots.node_entries(claimed, end - node.num_tokens - lo, end - lo)
        first = node.key_bytes[: self.page_size * TOKEN_BYTES]
        siblings = parent.host_children
        assert siblings is not None
        del siblings[first]
        parent.children[first] = node

    def undo_unevict(self, node: TreeNode) -> None:
        """Undo :meth:`unevict` (a raise later in the same operation)."""
        parent = node.parent
        assert parent is not None
        first = node.key_bytes[: self.page_size * TOKEN_BYTES]
        del parent.children[first]
        siblings = parent.host_children
        if siblings is None:
            parent.host_children = siblings = {}
        siblings[first] = node
        node.value = None

    def adopt_unevicted(self, nodes: list[TreeNode], register: bool = True) -> int:
        """The device pool gives ``nodes`` their new KV for good; returns their tokens."""
        tokens = 0
        for x in nodes:
            self.slots.adopt(x.value)
            if register:
                self.note_duplicate(x)
            tokens += x.num_tokens
        self.host_only_tokens -= tokens
        self.stats.unevicted_tokens += tokens
        return tokens

    def back_up_all(self, nodes: list[TreeNode]) -> None:
        """Copy ``nodes`` (each with its un-backed ancestors) to host, in order.

        If a host policy raises meanwhile, the copies made here are freed again.
        """
        admission = self.admission
        if admission is not None:
            nodes = [x for x in nodes if admission.admits(x)]
        written: list[TreeNode] = []
        self.journal = written
        try:
            for x in nodes:
                self.back_up_chain(x)
        except BaseException:
            for y in written:
                self.stats.written_tokens -= self.free_copy(y)
            raise
        finally:
            self.journal = None

    def evict_device(self, driver: EvictionDriver, want: int) -> list[TreeNode]:
        """The device driver's eviction, backed-up victims demoted to host-only.

        A demoted victim's device entries are kept aside (its ``value`` is
        None) until :meth:`settle_demotions` hands them to the cache to free.
        """
        self._demoted = []
        try:
            victims = driver.evict(want, self._demote)
        except BaseException:
            for node, value in self._demoted:  # the driver linked them back on device
                node.value = value
            self._demoted = []
            raise
        for node in victims:
            if node.parent is None and node.host_children:
                self.drop_host_subtree(node)  # unreachable now: gone from host too
        return victims

    def _demote(self, node: TreeNode) -> bool:
        """Keep device victim ``node`` on host only, backing it up first under write_back.

        False: it has no host copy and gets none (write_through with a count
        below the threshold, or a full host tier), so it leaves the tree.
        """
        if node.host_value is None:
            admission = self.admission
            if not (self.write_back and (admission is None or admission.admits(node))
                    and self.back_up(node)):
                return False
            # SGLang registers the write at its ack, while the node is on both tiers, and
            # leaves the entry (stale once demoted) where it is: this is the node's place in
            # the reclaim order, also after a later reload (unified_tree_core.py 1604-1610,
            # 2840-2849).
            self.note_duplicate(node)
        self._demoted.append((node, node.value))
        node.value = None
        self.offer(node)  # a host leaf, unless host-only children hang below it
        return True

    def settle_demotions(self) -> list[Any]:
        """Count the demotions of the eviction that just ended; return their device values."""
        values = []
        tokens = 0
        for node, value in self._demoted:
            values.append(value)
            tokens += node.num_tokens
        self._demoted = []
        self.host_only_tokens += tokens
        self.stats.demoted_tokens += tokens
        return values

    def candidates(self) -> list[TreeNode]:
        """The host leaves ``evict`` may take next."""
        return self.driver.candidates()

    def reset(self) -> None:
        self.driver.clear()
        self._duplicates.clear()
        self.host_only_tokens = 0
        self.removed_nodes = 0

    def describe(self) -> dict[str, Any]:
        """The tier's settings, as JSON types."""
        return {
            "host_tokens": self.size,
            "hicache_ratio": self.spec.ratio,
            "write_policy": self.write_policy,
            "write_threshold": self.threshold,
            "host_policy": self.policy.name,
            "load_back_threshold": self.load_back_threshold,
            **({} if self.admission is None else self.admission.describe()),
        }


def merged_hooks(device: Callbacks, host_policy: EvictionPolicy[Any]) -> Callbacks:
    """The device policy's lifecycle callbacks, each followed by a separate host policy's.

    A host policy that is its own object hears the tree's events too (its
    ``on_evict`` comes from the host driver).
    """
    host = callbacks_of(host_policy)

    def both(a: Callable[..., Any] | None, b: Callable[..., Any] | None) -> Any:
        if a is None or b is None:
            return a if b is None else b

        def call(*nodes: TreeNode) -> None:
            a(*nodes)
            b(*nodes)

        return call

    return device._replace(
        on_insert=both(device.on_insert, host.on_insert),
        on_hit=both(device.on_hit, host.on_hit),
        on_split=both(device.on_split, host.on_split),
    )
