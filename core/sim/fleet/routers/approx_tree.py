"""sglang-router 0.3.2's approximate multi-tenant radix tree, over any sequence of hashables.

sglang-router keeps one tree per model in which every worker (a "tenant") owns
the paths of the request texts it was sent. It never hears from the workers'
caches: the tree is what the router *sent*, trimmed by its own LRU eviction.
The Rust tree works on characters; this one works on any ``Sequence[Hashable]``
(a ``str`` is kept a ``str``, a 1-D integer numpy array, a replay's prompt, is
kept an array, anything else becomes a tuple), so the same code routes a
replay's token ids and the exactness harness's text. Arrays are compared in C
and sliced as views; a new leaf copies its part, so the tree holds each token
it was sent once, not every prompt whole.

Every rule below is taken from ``src/policies/tree.rs`` of the source the
sglang-router 0.3.2 wheel was built from (its sdist on PyPI,
``sglang_router-0.3.2.tar.gz``, cut at sglang's "[smg] release 0.3.2 (#17168)").
Line numbers below refer to that file.

What is not reproduced, and when it could matter:

* The tree is concurrent in Rust (``DashMap`` children, node locks); here it is
  single-threaded, which is what one request at a time through ``route`` is.
* The access clock is a process-wide atomic counter (``tree.rs:218-227``); here
  it is one counter per tree (a router has one tree: one model).
* Where Rust iterates a ``DashMap`` (random-seeded hash order) or pops equal
  timestamps from a ``BinaryHeap`` (unspecified order), this tree uses insertion
  order. Both only matter after an eviction: for which tenant a node whose
  cached tenant was evicted reports, and for which of several equally old
  leaves goes first (nodes an insert passed through all carry epoch 0). So
  eviction follows the Rust rules but is not checked against the real router.
* Rust reports the tenant ``"empty"`` for a node without tenants and may stamp
  it there (``tree.rs:583``, ``tree.rs:604-607``); here that is ``None`` and
  nothing is stamped. Only the root of a tree without workers can be such a
  node: an insert owns every node on its path and eviction removes a tenant
  from a node only after it left all the node's children, so a node with
  children keeps a tenant, and a node with neither is dropped.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ApproxTree", "Key", "as_key"]

Key = str | tuple[Hashable, ...] | npt.NDArray[np.integer[Any]]


def as_key(key: Sequence[Hashable]) -> Key:
    """The tree's own form of ``key``: ``str`` and 1-D integer arrays as they are, else a tuple."""
    if isinstance(key, str | tuple):
        return key
    if isinstance(key, np.ndarray) and key.ndim == 1 and key.dtype.kind in "iu":
        return key
    return tuple(key)


def head(key: Key) -> Hashable:
    """The first element, as the children map keys it (an array's as a plain int)."""
    first = key[0]
    return int(first) if isinstance(first, np.integer) else first


def shared_prefix(a: Key, b: Key) -> int:
    """How many leading elements ``a`` and ``b`` share (``tree.rs:289-317``).

    Arrays: one vectorised compare. Text and tuples: binary search on slice
    equality, each probe one C-level comparison, so long segments cost
    O(n log n) element compares at C speed, not a Python loop.
    """
    n = min(len(a), len(b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        differ = np.asarray(a[:n]) != np.asarray(b[:n])
        first = int(differ.argmax()) if n else 0
        return first if n and differ[first] else n
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(eq=False, slots=True)
class _Node:
    """One edge-labelled node: its segment, children by first element, tenants' last access."""

    text: Key
    parent: _Node | None
    children: dict[Any, _Node] = field(default_factory=dict)
    # tenant -> last access epoch (tree.rs:237 tenant_last_access_time); 0 marks a
    # node a tenant only passed through on insert (tree.rs:466-477, 488-499).
    tenants: dict[int, int] = field(default_factory=dict)
    # the tenant a prefix match ending here reports (tree.rs:242 last_tenant):
    # set when the node is created, copied on a split, never moved by later inserts.
    last_tenant: int | None = None


class ApproxTree:
    """The router's view of what each worker holds: insert, prefix match, evict by size."""

    def __init__(self) -> None:
        self.root = _Node(text="", parent=None)
        self.size: dict[int, int] = {}  # tenant -> elements it owns (tree.rs:249 tenant_char_count)
        self._epoch = 0

    def _tick(self) -> int:
        """The next access epoch (tree.rs:218-227: a fetch_add counter, starting at 0)."""
        epoch = self._epoch
        self._epoch += 1
        return epoch

    def _own(self, node: _Node, tenant: int, stamp: int) -> None:
        """``tenant`` now owns ``node`` (counting its segment once)."""
        if tenant not in node.tenants:
            self.size[tenant] = self.size.get(tenant, 0) + len(node.text)
        node.tenants[tenant] = stamp

    def insert(self, key: Key, tenant: int) -> None:
        """Record that ``key`` was sent to ``tenant`` (``tree.rs:362-528``).

        Walks down matching whole segments, splitting a segment where the key
        departs from it; the rest of the key becomes a new leaf owned by
        ``tenant`` with a fresh epoch. Nodes passed through are owned with epoch 0
        (no timestamp update); when the key ends inside the tree, the last node
        reached gets a fresh epoch.
        """
        self.root.tenants.setdefault(tenant, 0)  # tree.rs:369-373: no stamp here
        self.size.setdefault(tenant, 0)
        node, rest = self.root, key
        while len(rest):
            child = node.children.get(head(rest))
            if child is None:  # tree.rs:398-423: new leaf, stamped, done
                own = rest.copy() if isinstance(rest, np.ndarray) else rest  # not the prompt
                leaf = _Node(text=own, parent=node, last_tenant=tenant)
                self._own(leaf, tenant, self._tick())
                node.children[head(rest)] = leaf
                return
            shared = shared_prefix(rest, child.text)
            if shared < len(child.text):  # tree.rs:435-482: split the child at `shared`
                child = self._split(node, child, shared)
            if tenant not in child.tenants:  # tree.rs:466-477, 488-499
                self._own(child, tenant, 0)
            node, rest = child, rest[shared:]
        node.tenants[tenant] = self._tick()  # tree.rs:522-526

    def _split(self, parent: _Node, child: _Node, at: int) -> _Node:
        """Cut ``child``'s segment at ``at``: a new upper node takes its tenants and last tenant."""
        upper = _Node(text=child.text[:at], parent=parent,
                      tenants=dict(child.tenants), last_tenant=child.last_tenant)
        child.text = child.text[at:]
        child.parent = upper
        upper.children[head(child.text)] = child
        parent.children[head(upper.text)] = upper
        return upper

    def prefix_match(self, key: Key) -> tuple[int | None, int]:
        """The tenant of the deepest node ``key`` reaches, and how many elements matched.

        ``tree.rs:531-619``: whole segments are consumed; a partial match inside a
        segment still counts its shared elements and stops at that node. The
        tenant is the node's cached ``last_tenant`` if it still owns the node,
        else its first tenant (cached from then on); ``None`` stands for Rust's
        ``"empty"`` (a node with no tenant). One match in eight (by the epoch
        counter) refreshes that tenant's timestamp on the node (``tree.rs:601-607``).
        """
        node, rest, matched = self.root, key, 0
        while len(rest):
            child = node.children.get(head(rest))
            if child is None:
                break
            shared = shared_prefix(rest, child.text)
            matched += shared
            node = child
            if shared < len(child.text):
                break
            rest = rest[shared:]
        tenant = node.last_tenant
        if tenant is None or tenant not in node.tenants:
            tenant = next(iter(node.tenants), None)
            node.last_tenant = tenant
        epoch = self._tick()
        if tenant is not None and epoch & 0x7 == 0:
            node.tenants[tenant] = epoch
        return tenant, matched

    def _is_leaf_for(self, node: _Node, tenant: int) -> bool:
        """``node`` holds ``tenant`` and none of its children does (``tree.rs:695-716``)."""
        return tenant in node.tenants and not any(
            tenant in c.tenants for c in node.children.values())

    def evict_by_size(self, max_size: int) -> None:
        """Trim every tenant to at most ``max_size`` elements, oldest leaves first.

        ``tree.rs:718-821``: all (node, tenant) leaves go into a min-heap by
        timestamp; popping one whose tenant is over the limit and which is still
        its leaf removes the tenant from it (dropping the node when no tenant or
        child is left) and, when the parent becomes the tenant's leaf, pushes
        the parent with the parent's own timestamp.
        """
        # A tenant within the limit is never trimmed (sizes only fall below), so its leaves
        # stay out of the heap: the others pop in the same order, far fewer pops.
        over = {t for t, n in self.size.items() if n > max_size}
        if not over:
            return
        heap: list[tuple[int, int, int, _Node]] = []
        seq = 0
        stack = [self.root]
        while stack:
            node = stack.pop()
            children = node.children.values()
            stack.extend(children)
            # _is_leaf_for for every tenant at once: the tenants no child holds.
            below: set[int] = set().union(*(c.tenants for c in children))
            for tenant, stamp in node.tenants.items():
                if tenant in over and tenant not in below:
                    heap.append((stamp, seq, tenant, node))
                    seq += 1
        heapq.heapify(heap)
        while heap:
            _, _, tenant, node = heapq.heappop(heap)
            if self.size.get(tenant, 0) <= max_size or not self._is_leaf_for(node, tenant):
                continue
            self.size[tenant] = max(0, self.size[tenant] - len(node.text))
            del node.tenants[tenant]
            parent = node.parent
            if parent is None:
                continue
            if not node.children and not node.tenants:
                del parent.children[head(node.text)]
            if self._is_leaf_for(parent, tenant):
                heapq.heappush(heap, (parent.tenants[tenant], seq, tenant, parent))
                seq += 1

    def remove_tenant(self, tenant: int) -> None:
        """Forget ``tenant`` everywhere (``tree.rs:823-894``), leaves upward."""
        stack, queue = [self.root], []
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            if self._is_leaf_for(node, tenant):
                queue.append(node)
        while queue:
            node = queue.pop(0)
            node.tenants.pop(tenant, None)
            parent = node.parent
            if parent is None:
                continue
            if not node.children and not node.tenants:
                parent.children.pop(head(node.text), None)
            if self._is_leaf_for(parent, tenant):
                queue.append(parent)
        self.size.pop(tenant, None)
