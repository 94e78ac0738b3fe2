"""The tree under :class:`~radix_evict.cache.radix_cache.RadixCache`: state, undoable changes.

Everything here changes the tree in a way the caller can roll back: an
insert records what it stamped, split, created and raised in an
:class:`InsertChange` as it goes, a lock walk can be walked back, a split
undone. :class:`~radix_evict.cache.radix_cache.RadixCache` (a subclass)
checks the arguments, runs one operation at a time, commits or undoes, and
keeps the counters; the host tier's part of each operation is in
``host_tier.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from typing import Any, Final

from mypy_extensions import mypyc_attr

from radix_evict.cache.eviction import EvictionDriver
from radix_evict.cache.host_tier import HostTier
from radix_evict.cache.slots import SlotStorage
from radix_evict.cache.tree import (
    TOKEN_BYTES,
    SplitRecord,
    TokenKey,
    TreeNode,
    as_token_array,
    children_to_scan,
    common_prefix_len,
    find_child,
    key_view,
    split_node,
    unsplit_node,
)
from radix_evict.errors import CacheBusyError
from radix_evict.policies.contract import Callbacks

_GET_IDENT: Final = get_ident  # (every operation asks which thread it runs on)


class InsertWalk:
    """Where an insert's walk went: the nodes passed and where the key left the tree."""

    def __init__(self) -> None:
        self.path: list[TreeNode] = []
        self.off = 0  # key bytes matched
        self.split_at = 0  # tokens the last node shares with a key diverging inside it
        self.first = b""  # the key the last child is filed under, or the missed page's


class InsertChange:
    """What an insert changed so far, to undo it if the policy raises."""

    def __init__(self, clock0: float, root_time: float) -> None:
        self.clock0 = clock0
        self.root_time = root_time
        self.clock = clock0
        self.touched: list[tuple[TreeNode, float, int, int, object]] = []
        self.split: SplitRecord | None = None
        self.parent: TreeNode | None = None  # the node the new leaf hangs from
        self.leaf: TreeNode | None = None
        self.raised: list[tuple[TreeNode, int]] = []  # history_len raised, old values
        self.unevicted: list[TreeNode] = []  # host-only nodes given the insert's KV


@mypyc_attr(allow_interpreted_subclasses=True)  # RadixCache, and through it engines and tests
class RadixTree:
    """A radix tree of token prefixes whose nodes own KV slots through ``slots``.

    ``hooks`` are the policies' lifecycle callbacks (device and host merged),
    looked up once: one a policy does not define costs a None test per
    operation (radix_evict.policies.lifecycle). The driver calls ``on_evict``
    itself, inside its eviction loop.
    """

    def __init__(
        self, slots: SlotStorage, driver: EvictionDriver, host: HostTier | None, hooks: Callbacks
    ) -> None:
        P = slots.page_size
        self.page_size = P
        self._slots = slots
        self._driver = driver
        self._host = host
        # A walk finds a child among this few by comparing first pages in place.
        self._scan_children = children_to_scan(P)
        self._pb = P * TOKEN_BYTES  # a page's bytes in a key
        self._on_insert: Callable[[TreeNode], Any] | None = hooks.on_insert
        self._on_hit: Callable[[TreeNode], Any] | None = hooks.on_hit
        self._on_split: Callable[[TreeNode, TreeNode], Any] | None = hooks.on_split
        self._clock: float = 0.0  # SGLang's logical clock: one tick per stamp
        # Under write_back SGLang counts no insert hits (hit_count stays as matched).
        self._count_hits = host is None or not host.write_back
        self._backup_at = host.threshold if host is not None else 0
        # The thread inside an operation now (0: none) and which operation: the guard
        # against re-entry and concurrent use (see _refuse). Two stores per call.
        self._busy: int = 0
        self._busy_op: str = ""
        self._init_tree()

    # ------------------------------------------------------------------ one at a time
    def _enter(self, op: str) -> None:
        """Start operation ``op``, or refuse it while another runs (see the class docstring).

        The public methods call this, then run their work in ``try``/``finally``
        that clears ``_busy``: two stores per call.
        """
        me = _GET_IDENT()
        if self._busy:
            raise self._refuse(op, me)
        self._busy = me
        self._busy_op = op

    def _refuse(self, op: str, me: int) -> Exception:
        """The error for ``op`` starting while ``self._busy_op`` runs (nothing changed yet)."""
        running = self._busy_op
        if self._busy == me:
            return self._driver._error(
                f"called RadixCache.{op} while the cache was in {running} (from its score() "
                "or a lifecycle callback); a policy must not call back into the cache, so "
                f"{running} was undone and the cache is as it was before it"
            )
        return CacheBusyError(
            f"RadixCache.{op} called from thread {me} while thread {self._busy} is in "
            f"RadixCache.{running}: a RadixCache is single-threaded (as each SGLang "
            "scheduler's tree is); serialise calls with a lock or use one cache per thread. "
            f"This {op} changed nothing"
        )

    def locate(self, tokens: TokenKey) -> tuple[int, TreeNode]:
        """How long the cached page-aligned prefix of ``tokens`` is, and the node it ends at.

        Read only: unlike :meth:`match_prefix` it stamps nothing, splits nothing,
        tells the policy nothing and builds no slot list. It is how a caller
        that has just inserted ``tokens`` finds the node the insert ended on, to
        move its lock there (SGLang's unified tree reads it off its insert
        result), without counting a use. A prefix ending inside a node stops at
        that node's start.
        """
        me = _GET_IDENT()
        if self._busy:
            raise self._refuse("locate", me)
        arr = as_token_array(tokens)
        P = self.page_size
        n = len(arr) // P * P
        node = self._root
        off = 0
        if n:
            kv = key_view(arr, n)
            nb = n * TOKEN_BYTES
            pb = P * TOKEN_BYTES
            while off < nb:
                child = find_child(node.children, kv, off, pb, self._scan_children)[0]
                if child is None:
                    break
                ck = child.key_bytes
                end = off + len(ck)
                if end > nb or not ck.startswith(kv[off:end]):
                    break
                node = child
                off = end
        return off // TOKEN_BYTES, node

    # ------------------------------------------------------------------ sizes
    def evictable_size(self) -> int:
        """Tokens in unlocked nodes."""
        return self._evictable

    def protected_size(self) -> int:
        """Tokens in nodes some caller has locked."""
        return self._protected

    def total_size(self) -> int:
        """Tokens the tree holds."""
        return self._evictable + self._protected

    @property
    def root(self) -> TreeNode:
        return self._root

    @property
    def num_nodes(self) -> int:
        """Nodes in the tree (host-only ones too), the root excluded."""
        host = self._host
        return self._num_nodes - (host.removed_nodes if host is not None else 0)

    @property
    def host_tier(self) -> HostTier | None:
        """The host tier (its pool, driver, settings and counters), or None."""
        return self._host

    def _stamp(self, path: list[TreeNode]) -> None:
        """One tick for the whole path, as SGLang stamps it.

        The matched node gets it, each ancestor (the root too) 1e-5 less, so
        deeper nodes count as more recent.
        """
        t = self._clock + 1.0
        self._clock = t
        for x in reversed(path):
            x.last_access_time = t
            t -= 0.00001
        self._root.last_access_time = t

    def _walk_for_insert(self, kv: memoryview, n: int) -> InsertWalk:
        """The nodes an insert of ``kv`` (``n`` tokens) passes, host-only ones included.

        Changes nothing. ``split_at`` is the tokens the last node shares with
        the key when the key diverges inside it (0: it does not).
        """
        P = self.page_size
        nb = n * TOKEN_BYTES
        pb = P * TOKEN_BYTES
        walk = InsertWalk()
        path = walk.path
        few = self._scan_children
        node = self._root
        off = 0
        while off < nb:
            child, first = find_child(node.children, kv, off, pb, few)
            if child is None:
                hc = node.host_children  # a host tier's host-only nodes (None without one)
                if hc:
                    if not first:
                        first = kv[off : off + pb].tobytes()
                    child = hc.get(first)
            # The key the last child was found under (hashed already), or the first page
            # of the rest of the key where the walk missed (empty if it was not made).
            walk.first = first
            if child is None:
                break
            path.append(child)
            ck = child.key_bytes
            end = off + len(ck)
            if end <= nb and ck.startswith(kv[off:end]):
                off = end
                node = child
                continue
            walk.split_at = common_prefix_len(ck, kv, off) // P * P
            off += walk.split_at * TOKEN_BYTES
            break
        walk.off = off
        return walk

    def _apply_insert(
        self, walk: InsertWalk, change: InsertChange, kv: memoryview, n: int, dev: int,
        claimed: Any, lo: int, prio: int, done: int, context: Any,
    ) -> None:
        """Stamp, split and count along the path, add the new leaf, then score.

        Everything it changes is recorded in ``change`` as it goes, so that
        a raise from the policy (a score, a callback) can be undone.
        """
        host = self._host
        count_hits = self._count_hits
        backup_at = self._backup_at
        backups: list[TreeNode] = []
        path = walk.path
        split_at = walk.split_at
        clock = change.clock0 + 1
        root = self._root
        root.last_access_time = clock
        node = root
        last = len(path) - 1
        for i, child in enumerate(path):
            change.touched.append((child, child.last_access_time, child.priority,
                                   child.hit_count, child.context))
            clock += 1
            child.last_access_time = clock
            if i == last and split_at:
                self._clock = clock
                change.split = SplitRecord(child)
                child = self._split(child, split_at, walk.first)
                clock = self._clock
            if i >= dev:  # host-only: the insert's KV puts it back on device
                assert host is not None
                host.unevict(node, child, claimed, lo)
                change.unevicted.append(child)
            if context is not None:
                child.context = context  # (after a split: the head, which the key covers)
            if child.priority < prio:
                child.priority = prio
            if child.prefix_len > done and count_hits:
                child.hit_count += 1
                if backup_at and child.host_value is None and child.hit_count >= backup_at:
                    backups.append(child)
            node = child
        change.parent = node
        if walk.off < n * TOKEN_BYTES:
            leaf = self._new_leaf(walk, change, kv, n, claimed, lo, prio, done, clock, context)
            clock += 2
            if backup_at and backup_at <= 1 and leaf.hit_count:
                backups.append(leaf)
        change.clock = clock
        # The tail a split left behind, and the new leaf (or the fully matched node).
        scored = change.leaf if change.leaf is not None else node
        if change.split is None:
            self._driver.offer(scored)
        else:
            self._driver.offer(change.split.node, scored)
        if backups:
            assert host is not None
            host.back_up_all(backups)

    def _new_leaf(
        self, walk: InsertWalk, change: InsertChange, kv: memoryview, n: int, claimed: Any,
        lo: int, prio: int, done: int, clock: float, context: Any,
    ) -> TreeNode:
        """The leaf holding the key's uncached tail, filed under ``change.parent``."""
        node = change.parent
        assert node is not None
        matched = walk.off // TOKEN_BYTES
        value = self._slots.node_entries(claimed, matched - lo, n - lo)
        leaf = TreeNode(node, kv[walk.off :].tobytes(), value, clock + 1, prio)
        leaf.creation_time = clock + 2
        leaf.context = context
        if n > done and self._count_hits:
            leaf.hit_count = 1
        # Filed under the page the walk missed, if it made that key (hashed already).
        first = walk.first
        node.children[first if first and not walk.split_at else leaf.key_bytes[:self._pb]] = leaf
        change.leaf = leaf
        depth = leaf.prefix_len
        x: TreeNode | None = node
        while x is not None and x.history_len < depth:
            change.raised.append((x, x.history_len))
            x.history_len = depth
            x = x.parent
        on_insert = self._on_insert
        if on_insert is not None:
            on_insert(leaf)
        return leaf

    def _undo_insert(self, change: InsertChange) -> None:
        """Put back everything ``_apply_insert`` recorded in ``change``."""
        leaf = change.leaf
        if leaf is not None:
            node = change.parent
            assert node is not None
            del node.children[leaf.key_bytes[: self._pb]]
            leaf.parent = None
            for x, old in reversed(change.raised):
                x.history_len = old
        host = self._host
        for x in reversed(change.unevicted):
            assert host is not None
            host.undo_unevict(x)
        split = change.split
        if split is not None and split.node.parent is not None:
            self._unsplit(split)
        for x, t, p, h, c in reversed(change.touched):
            x.last_access_time, x.priority, x.hit_count, x.context = t, p, h, c
        self._root.last_access_time = change.root_time
        self._clock = change.clock0

    def _split(self, child: TreeNode, m: int, first: bytes = b"") -> TreeNode:
        """Split ``child`` after ``m`` tokens (``tree.split_node``); the new parent takes the head.

        The caller offers the tail to the driver once its own changes are done.
        ``first``: the key ``child`` was found under in its parent (its first
        page, hashed already), if the caller has it (empty if not).
        """
        head = split_node(child, m, self._clock + 1.0, self.page_size, first)
        self._clock += 3.0
        host = self._host
        if host is not None and head.value is not None and head.host_value is not None:
            host.note_duplicate(head)
        self._num_nodes += 1
        on_split = self._on_split
        if on_split is not None:
            on_split(head, child)
        return head

    def _unsplit(self, split: SplitRecord) -> None:
        """Undo :meth:`_split`: the tail takes its head back (the head is dropped)."""
        unsplit_node(split, self.page_size)
        self._num_nodes -= 1

    def _inc_lock_ref(self, node: TreeNode | Any) -> None:
        root = self._root
        if type(node) is not TreeNode and not isinstance(node, TreeNode):
            raise self._foreign_node("inc_lock_ref", node)
        start: TreeNode = node
        if start.value is None and start is not root:
            raise ValueError(
                "inc_lock_ref: node is on host only (load_back it first, then lock it)"
            )
        moved = 0
        x = start
        while x is not root:
            if x.lock_ref == 0:
                moved += x.num_tokens
            x.lock_ref += 1
            parent = x.parent
            if parent is None:
                self._undo_lock_walk(start, x, +1)
                raise self._foreign_node("inc_lock_ref", node)
            x = parent
        self._evictable -= moved
        self._protected += moved

    def _dec_lock_ref(self, node: TreeNode | Any) -> None:
        root = self._root
        if node is root:
            return
        if type(node) is not TreeNode and not isinstance(node, TreeNode):
            raise self._foreign_node("dec_lock_ref", node)
        start: TreeNode = node
        if start.lock_ref <= 0:
            raise ValueError("dec_lock_ref: node is not locked (unlocked more often than locked)")
        moved = 0
        x = start
        while x is not root:
            x.lock_ref -= 1
            if x.lock_ref == 0:
                moved += x.num_tokens
            parent = x.parent
            if parent is None:
                self._undo_lock_walk(start, x, -1)
                raise self._foreign_node("dec_lock_ref", node)
            last = x
            x = parent
        if not start.children:
            try:
                self._driver.offer(start)
            except BaseException:
                self._undo_lock_walk(start, last, -1)
                raise
        self._evictable += moved
        self._protected -= moved

    @staticmethod
    def _undo_lock_walk(start: TreeNode, last: TreeNode, delta: int) -> None:
        """Roll back a lock walk from ``start`` up to ``last``, both included."""
        x: TreeNode | None = start
        while x is not None:
            x.lock_ref -= delta
            if x is last:
                break
            x = x.parent

    @staticmethod
    def _foreign_node(op: str, node: object) -> Exception:
        if not isinstance(node, TreeNode):
            return TypeError(
                f"{op}: expected a TreeNode from match_prefix, got {type(node).__name__}"
            )
        return ValueError(f"{op}: node is not in this cache (evicted, reset, or another cache's)")

    def iter_nodes(self) -> list[TreeNode]:
        """Every node except the root, parents before children."""
        out: list[TreeNode] = []
        stack = [self._root]
        while stack:
            x = stack.pop()
            if x is not self._root:
                out.append(x)
            stack.extend(x.children.values())
            if x.host_children:
                stack.extend(x.host_children.values())
        return out

    def evictable_leaves(self) -> list[TreeNode]:
        """The nodes ``evict`` may take next (each exactly once)."""
        return self._driver.candidates()

    def _init_tree(self) -> None:
        root = TreeNode(None, b"", self._slots.empty, self._clock)
        root.lock_ref = 1
        self._root = root
        self._evictable = 0
        self._protected = 0
        self._num_nodes = 0
