"""The hybrid radix cache: one tree whose nodes carry full-attention KV, window KV and states.

The rules are SGLang 0.5.23's unified radix cache (``mem_cache/unified_cache/``):

- a match returns the longest prefix at whose end every component accepts the
  node: full KV present; for a sliding window, at least ``window`` tokens of live
  window KV since the last tombstone on the path; for Mamba, a state on that
  very node (``create_match_validator`` in ``components/{full,swa,mamba}.py``);
- an insert frees the caller's duplicate slots, brings a window tombstone back to
  life from the caller's fresh slots where they lie inside its window, keeps window
  KV only from ``swa_evicted_len`` on (the caller freed what lay before it) and
  caps a new leaf's live window at one window (``components/swa.py:454-625``); a
  Mamba state is saved on the node where the insert ends (``components/mamba.py:227-253``);
- locks: full locks the whole path, the window locks nodes up to ``window``
  tokens back (tombstones counted) and marks the boundary, Mamba locks one node;
- eviction is per component (``evict``);
- with a host tier (``host``), nodes are backed up on insert and a backed-up
  device leaf is evicted to host only; a match reaches host-only copies and
  ``load_back`` brings them to the device.

Counts, not slot indices, are kept (``pool``): every decision reads counts only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from radix_evict.cache.compiled import page_kernel
from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.hybrid.host import HybridHost
from radix_evict.cache.hybrid.lru import ComponentLRU
from radix_evict.cache.hybrid.node import FULL, MAMBA, SWA, HybridNode
from radix_evict.cache.hybrid.pool import HybridPools
from radix_evict.cache.tree import TOKEN_BYTES

SPLIT_TIME_STEP = 0.00001  # the match's per-ancestor step back in time (SGLang's)
_LOOPS = page_kernel()  # the flat tree's C page loops (None: not built, or pure Python asked)


def as_key(tokens: Any) -> np.ndarray:
    """``tokens`` as the int64 array the tree compares: C-contiguous (copied only if not)."""
    return np.asarray(tokens, dtype=np.int64, order="C")


@dataclass(frozen=True)
class HybridMatch:
    """What a match found: the reusable prefix and how far full KV alone reaches.

    With a host tier, ``host_prefix_len`` is where the prefix every component can
    serve from either tier ends (at ``host_node``); ``host_len``, ``swa_host_len``
    and ``mamba_host_len`` are SGLang's host hit lengths per component.
    """

    prefix_len: int  # every component present on device: what a request can reuse
    full_prefix_len: int  # full KV's own hit length (SGLang's full_kv_hit_length)
    node: HybridNode  # where the reusable prefix ends (lock this one)
    branching_len: int | None  # SWA/Mamba: a page/grid-aligned point past prefix_len
    host_prefix_len: int = 0
    host_node: HybridNode | None = None
    host_len: int = 0
    swa_host_len: int = 0
    mamba_host_len: int = 0


@dataclass(frozen=True)
class LockReceipt:
    """What a release must replay: the node and the window lock's boundary mark."""

    node: HybridNode
    swa_uuid: int | None


@dataclass(frozen=True)
class HybridInsert:
    prefix_len: int  # tokens of the key already in the tree
    mamba_exist: bool  # the end node already had a state: the caller's was freed
    node: HybridNode  # where the key ends now (a checkpoint moves its lock here)


class HybridRadixCache:
    """A radix tree over counted pools with full attention plus one optional auxiliary component.

    ``window`` (tokens) makes it a sliding-window model, ``mamba`` a recurrent
    one; neither is plain full attention (use ``RadixCache`` for that: this cache
    is slower and does not implement the policies' callbacks). ``policy`` names
    a registered eviction policy: it orders the full-attention leaves.
    ``mamba_grid`` is where Mamba branching points may land (SGLang's
    ``mamba_checkpoint_grid``); ``mamba_states_per_path`` caps the states on
    one root path (-1: no cap, SGLang's default). ``host_tier`` adds a host tier
    (``host``; write-through policies only).
    """

    def __init__(
        self,
        pools: HybridPools,
        *,
        window: int | None = None,
        mamba: bool = False,
        policy: str | Any = "lru",
        policy_config: Any = None,
        mamba_grid: int | None = None,
        mamba_states_per_path: int = -1,
        host_tier: HostTierSpec | None = None,
    ) -> None:
        if window is not None and mamba:
            raise ValueError("a hybrid cache has one auxiliary component: window or mamba")
        if window is not None and window <= 0:
            raise ValueError(f"window must be a positive number of tokens, got {window}")
        if mamba_states_per_path == 0 or mamba_states_per_path < -1:
            raise ValueError(
                f"mamba_states_per_path must be -1 or >= 1, got {mamba_states_per_path}"
            )
        self.pools = pools
        self.page_size = pools.page_size
        self.window = window
        self.aux: int | None = SWA if window is not None else (MAMBA if mamba else None)
        self.mamba_grid = mamba_grid or self.page_size
        self.mamba_states_per_path = mamba_states_per_path
        if isinstance(policy, str):
            from radix_evict.policies.resolve import policy_by_name

            policy = policy_by_name(policy, policy_config)
        self.policy = policy
        # A policy scores the flat tree's TreeNode; HybridNode has the fields the built-in
        # ones read (a policy that reads others is refused just below). The policy's own
        # bound method: eviction scores every leaf on each call, no wrapper in between.
        self.score = cast(Callable[[Any], Any], policy.score)
        self._time = 0.0
        self._ids = 0
        self._uuid = 0
        self.root = self._new_node()
        self.root.lock = [1, 1, 1]  # never evicted, never a leaf
        try:
            self.score(self.root)
        except AttributeError as e:  # tlru reads the flat tree's depth fields
            raise ValueError(
                f"policy {getattr(policy, 'name', policy)!r} reads node.{e.name}, which the "
                "hybrid tree does not keep"
            ) from None
        self.lru = ComponentLRU(self.aux if self.aux is not None else SWA)
        self.leaves: set[HybridNode] = set()
        self.evictable = [0, 0, 0]
        self.protected = [0, 0, 0]
        self.host = HybridHost(self, host_tier) if host_tier is not None else None

    # ------------------------------------------------------------------ helpers
    def tick(self) -> float:
        t = self._time
        self._time += 1.0
        return t

    def _new_node(self, priority: int = 0) -> HybridNode:
        node = HybridNode(self._ids, self._time, priority)
        self._ids += 1
        self._time += 2.0  # last_access_time, creation_time
        return node

    def _child_key(self, key: np.ndarray, offset: int = 0) -> bytes:
        return key[offset : offset + self.page_size].tobytes()

    def _match_len(self, node_key: np.ndarray, key: np.ndarray, offset: int) -> int:
        """Whole pages ``node_key`` shares with ``key`` from token ``offset`` on (both
        C-contiguous int64: keys come in through :func:`as_key` and are cut, never strided)."""
        if _LOOPS is not None:  # the flat tree's C loop: one pass, no temporary arrays
            m = int(_LOOPS.common_prefix(node_key, key, offset * TOKEN_BYTES))
        else:
            n = min(len(node_key), len(key) - offset)
            diff = np.flatnonzero(node_key[:n] != key[offset : offset + n])
            m = int(diff[0]) if len(diff) else n
        return m // self.page_size * self.page_size

    def amount(self, node: HybridNode, component: int) -> int:
        """Slots ``component`` holds on ``node``: its tokens, or one state."""
        if not node.has[component]:
            return 0
        return 1 if component == MAMBA else len(node.key)

    def is_leaf(self, node: HybridNode) -> bool:
        """SGLang's device leaf: not the root, full KV on device, nothing locked, no child
        with full KV on device (``_is_device_leaf``, ``unified_tree_core.py:2348-2364``)."""
        if node is self.root or not node.has[FULL] or node.locked():
            return False
        children = node.children
        return not children or not any(c.has[FULL] for c in children.values())

    def refresh_leaf(self, node: HybridNode) -> None:
        if self.is_leaf(node):
            self.leaves.add(node)
        else:
            self.leaves.discard(node)

    def _account(self, node: HybridNode, component: int, sign: int) -> None:
        """Add (or take) ``node``'s ``component`` slots to the evictable or protected count."""
        n = sign * self.amount(node, component)
        if node.lock[component] > 0:
            self.protected[component] += n
        else:
            self.evictable[component] += n

    def set_aux(self, node: HybridNode) -> None:
        """Give ``node`` the auxiliary component's data, most recent in its LRU."""
        assert self.aux is not None and not node.has[self.aux]
        if self.host is not None and node in self.host.lru:
            self.host.lru.remove(node)  # no longer host-only (``set_component_device_value``)
        node.has[self.aux] = True
        self.lru.insert_mru(node)
        self._account(node, self.aux, +1)

    # ------------------------------------------------------------------ split
    def split(self, child: HybridNode, at: int) -> HybridNode:
        """Cut ``child``'s key at ``at``; the new parent gets the front (``_split_node``)."""
        parent = child.parent
        assert parent is not None and 0 < at < len(child.key)
        new = self._new_node(child.priority)
        new.key, child.key = child.key[:at], child.key[at:]
        new.parent = parent
        new.children = {self._child_key(child.key): child}
        new.hit_count = child.hit_count
        new.creation_time = child.creation_time
        new.has[FULL], new.lock[FULL] = child.has[FULL], child.lock[FULL]
        new.host[FULL] = child.host[FULL]
        if self.aux == SWA:
            new.has[SWA], new.lock[SWA] = child.has[SWA], child.lock[SWA]
            new.swa_uuid, child.swa_uuid = child.swa_uuid, None
            if new.has[SWA]:
                self.lru.insert_after(child, new)
            new.host[SWA] = child.host[SWA]
            if self.host is not None and new.host[SWA] and not new.has[SWA]:
                # Both halves of a host-only window copy stay in the host LRU (swa.py:665-681).
                if child in self.host.lru:
                    self.host.lru.insert_after(child, new)
                else:
                    self.host.lru.insert_mru(new)
        parent.children[self._child_key(new.key)] = new
        child.parent = new
        child.last_access_time = self.tick()
        self.refresh_leaf(new)
        self.refresh_leaf(child)
        return new

    # ------------------------------------------------------------------ match
    def _validators(self, host: bool = False) -> Callable[[HybridNode], bool]:
        """A per-match check: may the reusable prefix end at this node? ``host``: a host
        copy counts as present (``create_match_validator(match_device_only=False)``)."""
        window = self.window
        state = [float("inf")]

        def has(node: HybridNode, c: int) -> bool:
            return node.has[c] or (host and node.host[c])

        def check(node: HybridNode) -> bool:
            ok = has(node, FULL)
            if window is not None:
                if not has(node, SWA):
                    state[0] = 0
                    return False
                state[0] += len(node.key)
                ok = ok and state[0] >= window
            elif self.aux == MAMBA:
                ok = ok and has(node, MAMBA)
            return ok

        return check

    def match_prefix(self, tokens: Any) -> HybridMatch:
        """The longest prefix every component can serve (``_match_prefix_helper``)."""
        key = as_key(tokens)
        key = key[: len(key) // self.page_size * self.page_size]
        if len(key) == 0:
            return HybridMatch(0, 0, self.root, None)
        if self.host is not None:
            from radix_evict.cache.hybrid.host_match import match_with_host

            return match_with_host(self, key)
        check = self._validators()
        node, offset, full_hit = self.root, 0, 0
        best, best_len, walked = self.root, 0, 0
        ck = self._child_key(key)
        while offset < len(key) and ck in node.children:
            child = node.children[ck]
            m = self._match_len(child.key, key, offset)
            full_hit += m
            if m < len(child.key):
                node = self.split(child, m)
                walked += m
                if check(node):
                    best, best_len = node, walked
                break
            node = child
            walked += m
            if check(node):
                best, best_len = node, walked
            offset += m
            if offset < len(key):
                ck = self._child_key(key, offset)
        self._match_touch(best)
        return HybridMatch(best_len, full_hit, best, self._branching(full_hit, best_len))

    def peek_prefix(self, tokens: Any) -> int:
        """The reusable prefix :meth:`match_prefix` would find, read only: nothing split,
        stamped or told the policy (what a router reads off a replica). A prefix ending
        inside a node stops at that node's start, as ``RadixTree.locate`` does."""
        key = as_key(tokens)
        key = key[: len(key) // self.page_size * self.page_size]
        check = self._validators()
        node, offset, best_len = self.root, 0, 0
        while offset < len(key):
            child = node.children.get(self._child_key(key, offset))
            if child is None or self._match_len(child.key, key, offset) < len(child.key):
                break
            node = child
            offset += len(child.key)
            if check(node):
                best_len = offset
        return best_len

    def load_back(self, match: HybridMatch) -> HybridMatch:
        """Bring what ``match`` found on host to the device; the match as it stands after."""
        from radix_evict.cache.hybrid.host_match import load_back

        return load_back(self, match)

    def _match_touch(self, best: HybridNode) -> None:
        """Refresh the auxiliary LRU at the match's end, then stamp the path's times."""
        if self.aux == SWA and best is not self.root:
            assert self.window is not None
            self.lru.reset_window_mru(
                best, self.root, self.window + self.page_size, lambda n: n.has[SWA]
            )
        elif self.aux == MAMBA and best.has[MAMBA] and best is not self.root:
            self.lru.reset_mru(best)
        t = self.tick()
        cur: HybridNode | None = best
        while cur is not None:
            cur.last_access_time = t
            t -= SPLIT_TIME_STEP
            cur = cur.parent

    def _branching(self, full_hit: int, prefix_len: int) -> int | None:
        """Where a new window or state could be saved past the reusable prefix."""
        if self.aux is None:
            return None
        grid = self.page_size if self.aux == SWA else self.mamba_grid
        aligned = full_hit // grid * grid
        return aligned if aligned > prefix_len else None

    # ------------------------------------------------------------------ locks
    def inc_lock_ref(self, node: HybridNode) -> LockReceipt:
        """Lock full KV root-ward, the window up to ``window`` tokens, Mamba on ``node``."""
        cur: HybridNode | None = node
        while cur is not None and cur is not self.root:
            if cur.lock[FULL] == 0:
                self._move(cur, FULL, to_protected=True)
            cur.lock[FULL] += 1
            self.leaves.discard(cur)
            cur = cur.parent
        uuid = None
        if self.aux == SWA:
            uuid = self._lock_window(node)
        elif self.aux == MAMBA and node is not self.root:
            if node.lock[MAMBA] == 0:
                self._move(node, MAMBA, to_protected=True)
            node.lock[MAMBA] += 1
        self.refresh_leaf(node)
        return LockReceipt(node, uuid)

    def _lock_window(self, node: HybridNode) -> int | None:
        assert self.window is not None
        covered, uuid = 0, None
        cur: HybridNode | None = node
        while cur is not None and cur is not self.root and covered < self.window:
            if cur.lock[SWA] == 0:
                self._move(cur, SWA, to_protected=True)
            cur.lock[SWA] += 1
            covered += len(cur.key)
            if covered >= self.window:
                if cur.swa_uuid is None:
                    self._uuid += 1
                    cur.swa_uuid = self._uuid
                uuid = cur.swa_uuid
            cur = cur.parent
        return uuid

    def _move(self, node: HybridNode, component: int, to_protected: bool) -> None:
        n = self.amount(node, component)
        sign = 1 if to_protected else -1
        self.evictable[component] -= sign * n
        self.protected[component] += sign * n

    def dec_lock_ref(self, receipt: LockReceipt) -> None:
        """Release what ``inc_lock_ref`` took: the auxiliary component first, then full."""
        node = receipt.node
        if self.aux == SWA and node is not self.root:
            cur: HybridNode | None = node
            while cur is not None and cur is not self.root:
                self._unlock(cur, SWA)
                if receipt.swa_uuid is not None and cur.swa_uuid == receipt.swa_uuid:
                    break
                cur = cur.parent
        elif self.aux == MAMBA and node is not self.root:
            self._unlock(node, MAMBA)
        cur = node
        while cur is not None and cur is not self.root:
            self._unlock(cur, FULL)
            cur = cur.parent
        self.refresh_leaf(node)

    def _unlock(self, node: HybridNode, component: int) -> None:
        if node.lock[component] <= 0:
            raise RuntimeError(f"{node}: released a {component=} lock that is not held")
        if node.lock[component] == 1:
            self._move(node, component, to_protected=False)
        node.lock[component] -= 1
        if node.lock[component] == 0:
            self.refresh_leaf(node)

    # ------------------------------------------------------------------ insert
    def insert(
        self,
        tokens: Any,
        *,
        prev_prefix_len: int = 0,
        inserted_len: int = 0,
        priority: int = 0,
        swa_evicted_len: int = 0,
        mamba_state: bool = False,
    ) -> HybridInsert:
        """Put ``tokens`` in the tree; the caller's slots past ``prev_prefix_len`` pass to it.

        The caller holds full KV for ``[prev_prefix_len, len)``, window KV from
        ``max(prev_prefix_len, swa_evicted_len)`` on, and with ``mamba_state``
        one recurrent state for the end of the key. What the tree already has is
        freed (SGLang's duplicate frees); the rest is the tree's.
        """
        from radix_evict.cache.hybrid.insert import run_insert

        if self.aux == MAMBA and not mamba_state:
            raise ValueError("a Mamba cache's insert needs the request's state (mamba_state=True)")
        key = as_key(tokens)
        if key.ndim != 1:
            raise ValueError(f"tokens must be one sequence, got shape {key.shape}")
        key = key[: len(key) // self.page_size * self.page_size]
        for name, n in (("prev_prefix_len", prev_prefix_len), ("inserted_len", inserted_len),
                        ("swa_evicted_len", swa_evicted_len)):  # fmt: skip
            if n < 0:
                raise ValueError(f"{name} must be >= 0, got {n}")
        if swa_evicted_len % self.page_size:
            raise ValueError(f"swa_evicted_len {swa_evicted_len} is not page-aligned")
        return run_insert(
            self, key, prev_prefix_len, inserted_len, priority, swa_evicted_len, mamba_state
        )

    def add_leaf(self, parent: HybridNode, key: np.ndarray, priority: int) -> HybridNode:
        node = self._new_node(priority)
        node.parent = parent
        node.key = key
        parent.children[self._child_key(key)] = node
        self.evictable[FULL] += len(key)
        self.refresh_leaf(node)
        self.refresh_leaf(parent)
        return node

    # ------------------------------------------------------------------ evict
    def evict(self, full: int = 0, swa: int = 0, mamba: int = 0) -> tuple[int, int, int]:
        """Free at least the asked slots per component where it can; return what each freed."""
        from radix_evict.cache.hybrid.evict import run_evict

        return run_evict(self, full, swa, mamba)

    def new_uuid(self) -> int:
        self._uuid += 1
        return self._uuid

    # ------------------------------------------------------------------ views
    def evictable_size(self, component: int = FULL) -> int:
        return self.evictable[component]

    def protected_size(self, component: int = FULL) -> int:
        return self.protected[component]

    def check(self) -> None:
        """Raise if the tree's ledgers, leaf set or LRU (and host pools) disagree with its nodes."""
        nodes = [n for n in self.nodes() if n is not self.root]
        for c in (FULL, SWA, MAMBA):
            held = sum(self.amount(n, c) for n in nodes)
            locked = sum(self.amount(n, c) for n in nodes if n.lock[c] > 0)
            if (held - locked, locked) != (self.evictable[c], self.protected[c]):
                raise AssertionError(
                    f"component {c}: nodes hold {held - locked} evictable + {locked} protected,"
                    f" ledgers say {self.evictable[c]} + {self.protected[c]}"
                )
        if {n for n in nodes if self.is_leaf(n)} != self.leaves:
            raise AssertionError("the evictable-leaf set disagrees with the tree")
        aux = {n for n in nodes if self.aux is not None and n.has[self.aux]}
        if aux != set(self.lru.order()) or len(self.lru) != len(aux):
            raise AssertionError("the auxiliary LRU disagrees with the nodes that hold data")
        if self.host is not None:
            self.host.check()

    def nodes(self) -> list[HybridNode]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children.values())
        return out
