"""The eviction driver: candidates kept incrementally, lowest score evicted first.

SGLang scores every evictable leaf on each ``evict`` call, so the call costs
O(leaves). Here the candidates live in a heap that the cache updates as the
tree changes: whenever a node that could be an evictable leaf is touched,
split, unlocked, or loses its last child, it is offered with a fresh score.
Each entry carries a sequence number that the node remembers; an entry whose
number is not the node's latest, or whose node is no longer an evictable
leaf, is stale and skipped when popped (lazy invalidation). The heap stays
exact for any policy whose score reads only the node's own fields. A policy
that declares ``volatile_score`` is re-scored in full on every ``evict`` call.

The entry layout is this module's alone. A score is checked before its entry
exists (a real number that is not NaN, or a tuple of such numbers whose length
is the same for every score of the policy), and a policy that raises or
returns anything else leaves the driver as it was; :meth:`EvictionDriver.evict`
undoes its partial work when a parent's re-offer fails.
"""

from __future__ import annotations

import heapq
import numbers
from collections.abc import Callable
from typing import Any, Final

from radix_evict.cache.tree import TOKEN_BYTES, TreeNode, children_to_scan
from radix_evict.errors import PolicyError
from radix_evict.policies.contract import EvictionPolicy, callbacks_of

# (score, last_access_time, seq, node); a tuple score is spliced in: (*score, time, seq, node).
# Comparing one flat tuple costs half as much as a nested one, and every heap step compares.
_Entry = tuple[Any, ...]
# Read once: a compiled module reads a Final from a C global, not through ``heapq``'s dict.
_HEAPPUSH: Final = heapq.heappush
_HEAPPOP: Final = heapq.heappop


def is_evictable_leaf(node: TreeNode) -> bool:
    """Unlocked, no children, in the tree, KV on device, not the root: the device tier's rule.

    ``children`` holds device-resident children only (host-only ones are in
    ``host_children``), so a node whose children all went to host is a leaf.
    """
    return (
        node.lock_ref == 0
        and not node.children
        and node.parent is not None
        and node.value is not None
    )


def is_host_leaf(node: TreeNode) -> bool:
    """KV on host only, no child at all, unpinned on both tiers, in the tree: the host tier's rule.

    A host-only node's children are host-only too, so ``host_children`` is
    all of them.
    """
    return (
        node.value is None
        and node.parent is not None
        and not node.host_children
        and node.lock_ref == 0
        and node.host_lock_ref == 0
    )


def _is_real(x: object) -> bool:
    """A real number that orders with the others (NaN does not; bool counts as 0/1)."""
    t = type(x)
    if t is float:
        return x == x  # False only for NaN
    if t is int:
        return True
    return isinstance(x, numbers.Real) and x == x


class EvictionDriver:
    """Orders evictable leaves by ``(score, last_access_time)``, lowest first.

    ``source`` says where the policy came from (``dist version (entry point
    'ep')``, as the registry names it) and ``distribution`` which distribution
    that is; errors name both with the policy. ``host_tier`` makes it the host
    tier's driver: its candidates are :func:`is_host_leaf` nodes, unlinked
    from their parent's ``host_children``.
    """

    def __init__(
        self,
        policy: EvictionPolicy[Any],
        page_size: int,
        source: str | None = None,
        distribution: str | None = None,
        host_tier: bool = False,
    ) -> None:
        self.policy = policy
        self._host_tier = host_tier
        self.distribution = distribution
        origin = f" from {source}" if source else ""
        # A policy object passed directly may have no name: its class says which it is.
        named = repr(policy.name) if policy.name else f"{type(policy).__qualname__} (no name)"
        self.label = f"policy {named}{origin}"
        # Typed as returning Any: a compiled build must not coerce (and reject) the
        # result before _entry checks it and names the policy.
        self._score: Callable[[TreeNode], Any] = policy.score
        self._rescore_every_evict = bool(policy.volatile_score)
        # The policy's on_evict callback, if it defines one (looked up once).
        self._on_evict: Callable[[TreeNode], Any] | None = callbacks_of(policy).on_evict
        self._page_bytes = page_size * TOKEN_BYTES
        # A victim's key is found among this few siblings by identity, not sliced from its
        # own key and hashed again.
        self._scan_children = children_to_scan(page_size)
        self._heap: list[_Entry] = []
        self._seq = 0
        self._compact_at = 4096
        # The spliced layout orders entries as (score, time, seq) only if all of a
        # policy's scores have one shape: 0 means numbers, n >= 1 tuples of n items,
        # -1 not yet seen.
        self._width = -1

    # ------------------------------------------------------------------ offers
    def offer(self, node: TreeNode, also: TreeNode | None = None) -> None:
        """(Re-)score ``node`` (and ``also``) where evictable leaves; supersede older entries.

        Both are scored before either is pushed, so a policy that raises or
        returns garbage for either leaves the heap as it was.
        """
        first = self._entry(node) if self._live(node) else None
        second = self._entry(also) if also is not None and self._live(also) else None
        if first is not None:
            self._push(first)
        if second is not None:
            self._push(second)

    def _live(self, node: TreeNode) -> bool:
        """This tier's liveness rule."""
        if self._host_tier:
            return is_host_leaf(node)
        return is_evictable_leaf(node)

    def _push(self, entry: _Entry) -> None:
        seq = entry[-2]
        node: TreeNode = entry[-1]
        node._heap_seq = seq
        _HEAPPUSH(self._heap, entry)
        if len(self._heap) > self._compact_at:
            self._rebuild(rescore=False)

    def _entry(self, node: TreeNode, seq: int = 0) -> _Entry:
        """A checked heap entry for ``node``; ``seq`` 0 takes the next number."""
        try:
            score: Any = self._score(node)
        except PolicyError:
            raise  # already names the policy (its call back into the cache, refused)
        except Exception as e:
            err = self._error(f"score() raised {type(e).__name__}: {e}")
            err.__cause__ = e  # set by hand: a compiled build drops ``raise ... from e``
            raise err from e
        if seq == 0:
            self._seq += 1
            seq = self._seq
        t = type(score)
        if t is float or t is int:  # the fast path: one type test (and a NaN test)
            if score == score and self._width == 0:
                return (score, node.last_access_time, seq, node)
        elif t is tuple and len(score) == self._width and self._width > 0:
            for x in score:  # items: one type test each in the usual case
                tx = type(x)
                if tx is not int and not (tx is float and x == x) and not _is_real(x):
                    break
            else:
                return (*score, node.last_access_time, seq, node)
        self._check_score(score)
        if type(score) is tuple:
            return (*score, node.last_access_time, seq, node)
        return (score, node.last_access_time, seq, node)

    def _check_score(self, score: Any) -> None:
        """Raise for a score that cannot be ordered; record the policy's score shape."""
        if type(score) is tuple:
            width = len(score)
            ok = width > 0 and all(_is_real(x) for x in score)
        else:
            width = 0
            ok = _is_real(score)
        if not ok:
            raise self._error(
                f"score() returned {score!r} ({type(score).__name__}); a score must be a "
                "real number that is not NaN, or a non-empty tuple of such numbers"
            )
        if self._width == -1:
            self._width = width
        elif width != self._width:
            before = "a number" if self._width == 0 else f"tuples of {self._width} items"
            raise self._error(
                f"score() returned {score!r} after returning {before}; "
                "scores must be numbers, or tuples of one fixed length"
            )

    def _error(self, what: str) -> PolicyError:
        return PolicyError(
            f"{self.label}: {what}", policy=self.policy.name, distribution=self.distribution
        )

    # ------------------------------------------------------------------ evict
    def evict(
        self, num_tokens: int, demote: Callable[[TreeNode], bool] | None = None
    ) -> list[TreeNode]:
        """Unlink live leaves, lowest first, until ``num_tokens`` tokens are out; return them.

        A parent left childless becomes a candidate in the same call. The
        victims are detached from the tree (``parent`` None); their slots and
        the cache's sizes are the caller's to settle. ``demote`` (device tier
        with a host tier): a victim for which it returns True has a host copy
        and stays in the tree, moved to its parent's ``host_children``. The
        policy's ``on_evict`` (if any) hears of each victim just before it is
        unlinked. If a parent's re-offer or ``on_evict`` raises, every victim
        is linked back and the heap restored before the error propagates (a
        host copy made for a demotion stays: the node is then on both tiers).
        """
        if self._rescore_every_evict:
            self._rebuild(rescore=True)
        heap = self._heap
        pop = _HEAPPOP
        pb = self._page_bytes
        scan = self._scan_children
        on_evict = self._on_evict
        host_tier = self._host_tier
        freed = 0
        victims: list[TreeNode] = []
        parents: list[TreeNode] = []
        popped: list[_Entry] = []
        while freed < num_tokens and heap:
            entry = pop(heap)
            node: TreeNode = entry[-1]
            if entry[-2] != node._heap_seq or not self._live(node):
                continue  # stale: re-scored since, locked, grown a child, or gone from the tree
            parent = node.parent
            assert parent is not None
            node._heap_seq = -1
            kept = False
            if on_evict is not None or demote is not None:
                try:
                    if on_evict is not None:
                        on_evict(node)  # still linked: the policy can read its path
                    if demote is not None:
                        kept = demote(node)  # may offer it to the host tier's driver
                except BaseException:
                    node._heap_seq = entry[-2]
                    _HEAPPUSH(heap, entry)
                    self._undo_evict(victims, parents, popped)
                    raise
            if host_tier:
                first = node.key_bytes[:pb]
                siblings = parent.host_children
                assert siblings is not None
                del siblings[first]
                node.parent = None
            else:
                kids = parent.children
                first = b""
                if len(kids) <= scan:  # the key it is filed under, hashed already: no copy
                    for key, kid in kids.items():
                        if kid is node:
                            first = key
                            break
                if not first:
                    first = node.key_bytes[:pb]
                del kids[first]
                if kept:
                    siblings = parent.host_children
                    if siblings is None:
                        parent.host_children = siblings = {}
                    siblings[first] = node
                else:
                    node.parent = None
            victims.append(node)
            parents.append(parent)
            popped.append(entry)
            freed += node.num_tokens
            if not (parent.host_children if host_tier else parent.children):
                try:
                    self.offer(parent)
                except BaseException:
                    self._undo_evict(victims, parents, popped)
                    raise
        return victims

    def _undo_evict(
        self, victims: list[TreeNode], parents: list[TreeNode], popped: list[_Entry]
    ) -> None:
        """Link ``victims`` back, last first, and restore their heap entries."""
        pb = self._page_bytes
        for i in range(len(victims) - 1, -1, -1):
            node, parent, entry = victims[i], parents[i], popped[i]
            first = node.key_bytes[:pb]
            if self._host_tier:
                siblings = parent.host_children
                if siblings is None:
                    parent.host_children = siblings = {}
                siblings[first] = node
            else:
                if node.parent is parent and parent.host_children is not None:
                    parent.host_children.pop(first, None)  # a demotion undone
                parent.children[first] = node
            node.parent = parent
            node._heap_seq = entry[-2]
            heapq.heappush(self._heap, entry)

    # ------------------------------------------------------------------ views
    def clear(self) -> None:
        self._heap = []

    def candidates(self) -> list[TreeNode]:
        """The current evictable leaves (each exactly once)."""
        return [e[-1] for e in self._live_entries()]

    def stale_scores(self, leaves: list[TreeNode]) -> list[tuple[TreeNode, Any, Any]]:
        """(leaf, key in the heap, key now) for each of ``leaves`` the heap has wrong.

        ``leaves`` are the evictable leaves a from-scratch walk of the tree found;
        one with no live entry gets None as its heap key. A key is
        ``(*score, last_access_time)``. For the conformance kit: a policy whose
        scores changed behind the driver's back shows up here.
        """
        held = {id(e[-1]): e for e in self._live_entries()}
        out = []
        for node in leaves:
            entry = held.get(id(node))
            now = self._entry(node, -1)[:-2]
            if entry is None or entry[:-2] != now:
                out.append((node, None if entry is None else entry[:-2], now))
        return out

    def __len__(self) -> int:
        """Heap entries, stale ones included."""
        return len(self._heap)

    def _live_entries(self) -> list[_Entry]:
        """Each evictable leaf's latest entry; stale ones (superseded or no longer a leaf) go."""
        return [e for e in self._heap if e[-2] == e[-1]._heap_seq and self._live(e[-1])]

    def _rebuild(self, rescore: bool) -> None:
        """Drop stale entries (re-scoring the rest if asked), in place: nothing if it raises."""
        entries = self._live_entries()
        if rescore:
            entries = [self._entry(e[-1], e[-2]) for e in entries]
        heapq.heapify(entries)
        self._heap[:] = entries
        # Stale entries may again outnumber live ones 2:1 before the next sweep (amortised O(1)).
        self._compact_at = 3 * len(entries) + 4096
