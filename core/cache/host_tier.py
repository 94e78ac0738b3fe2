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

from dataclasses import dataclass, field
from typing import Any

from radix_evict.cache.args import check_int
from radix_evict.cache.eviction import EvictionDriver, is_evictable_leaf
from radix_evict.cache.pool import KVPool
from radix_evict.cache.tree import TreeNode
from radix_evict.policies.contract import EvictionPolicy
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
    """

    tokens: int | None = None
    ratio: float | None = None
    write_policy: str = DEFAULT_WRITE_POLICY
    write_threshold: int | None = None
    policy: str | EvictionPolicy[Any] | None = None
    policy_config: Any = None
    load_back_threshold: int = DEFAULT_LOAD_BACK_THRESHOLD

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
    """The host pool, its eviction driver and counters; the cache drives it.

    Host page entries are page ids of :attr:`pool` (a cpu :class:`KVPool`
    whose owner table checks every host page's transfers, as the device
    pool's does).
    """

    def __init__(
        self,
        spec: HostTierSpec,
        page_size: int,
        device_tokens: int,
        device_policy: EvictionPolicy[Any],
    ) -> None:
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
        self.stats = HostStats()
        self.host_only_tokens = 0  # tokens whose KV is on host only
        self.removed_nodes = 0  # host-only nodes that left the tree here (the cache's count)
        self.journal: list[TreeNode] | None = None  # while set, back_up lists what it wrote
        # Nodes on both tiers, in the order they got there: write_back reclaims their host
        # copies first under host pressure (SGLang keeps such a registry; entries may go stale).
        self._duplicates: dict[int, TreeNode] = {}

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

    def offer(self, node: TreeNode) -> None:
        """(Re-)score ``node`` for host eviction if it is a host leaf."""
        self.driver.offer(node)

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
        }
