"""A radix tree over offloaded chunks, one node per chunk, ranked by a radix-evict policy.

vLLM's CPU tier keeps chunks in a flat map; a request can only use a chunk whose whole
prefix it has (on GPU or in the tier). This tree links each chunk under the chunk before it
in the request that stored it, so only *leaves* go: a prefix loses its tail before its head,
and what is left stays usable. Nodes are radix-evict's own :class:`~radix_evict.TreeNode`,
so a policy reads the fields it reads everywhere (``num_tokens``, ``prefix_len`` in tokens
when vLLM gives key positions, ``hit_count``, ``last_access_time`` on a logical clock).

Pinning (a chunk vLLM is writing or reading, ``ref_cnt != 0``) locks the path to the root
as radix-evict's cache does: a chunk still in use keeps its prefix. No vLLM import here.

For a policy with ``uses_context`` the caller passes the request's
:class:`~radix_evict.RequestContext` to :meth:`ChunkTree.insert` and
:meth:`ChunkTree.touch`; it is recorded on the node created or the nodes stamped
(``node.context``: the last request that touched the chunk) before the callbacks run.
Nothing is recorded without one.

Scores are taken lazily: a node whose score may have changed is marked dirty and scored at
the start of the next :meth:`ChunkTree.evict`, so a policy that raises fails that eviction
(a ``PolicyError`` naming the policy and its distribution) and nothing else. Every
operation that raises leaves the tree as it was.
"""

from __future__ import annotations

import hashlib
import heapq
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from radix_evict.cache.tree import TreeNode
from radix_evict.errors import PolicyError
from radix_evict.policies.contract import EvictionPolicy

Key = bytes
_Entry = tuple[Any, ...]  # (*score, last_access_time, seq, node)


def _is_real(x: object) -> bool:
    return isinstance(x, numbers.Real) and x == x  # NaN is not


def token_id(key: Key) -> bytes:
    """A stable 8-byte token id for a key: the node's ``key_bytes`` (prefix fingerprints)."""
    return hashlib.blake2b(bytes(key), digest_size=8).digest()


class ChunkTree:
    """The chunks of one offload tier, their prefix links, pins, and eviction order."""

    def __init__(
        self,
        make_policy: Callable[[], EvictionPolicy[Any]],
        source: str | None = None,
        distribution: str | None = None,
    ) -> None:
        self._make_policy = make_policy
        self.distribution = distribution
        self._source = source
        self._reset(make_policy())

    def _reset(self, policy: EvictionPolicy[Any]) -> None:
        self.policy = policy
        origin = f" from {self._source}" if self._source else ""
        self.label = f"policy {policy.name!r}{origin}"
        self._score: Callable[[TreeNode], Any] = policy.score
        self._volatile = bool(policy.volatile_score)
        # Whether callers should build and pass request contexts (the policy reads them).
        self.uses_context = bool(getattr(policy, "uses_context", False))
        self._on_insert = self._callback("on_insert")
        self._on_hit = self._callback("on_hit")
        self._on_evict = self._callback("on_evict")
        self.root = TreeNode(None, b"", None, 0.0)
        self._nodes: dict[Key, TreeNode] = {}
        self._chunks: dict[Key, Any] = {}
        self._pinned: set[Key] = set()
        self._locked = 0  # resident nodes with lock_ref > 0
        self._heap: list[_Entry] = []
        self._seq_of: dict[TreeNode, int] = {}  # a node's latest heap entry
        self._dirty: dict[TreeNode, None] = {}  # to (re-)score before the next eviction
        self._seq = 0
        self._width = -1  # 0: scores are numbers; n: tuples of n; -1: none seen yet
        self._clock = 0.0

    def _callback(self, name: str) -> Callable[..., Any] | None:
        fn = getattr(self.policy, name, None)
        if fn is not None and not callable(fn):
            raise TypeError(f"{self.label}: {name} must be a method, got {type(fn).__name__}")
        return fn

    def _error(self, what: str, cause: BaseException | None = None) -> PolicyError:
        err = PolicyError(f"{self.label}: {what}", policy=self.policy.name,
                          distribution=self.distribution)
        err.__cause__ = cause
        return err

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:
            raise self._error(f"{fn.__name__}() raised {type(e).__name__}: {e}", e) from e

    def _tick(self) -> float:
        self._clock += 1.0
        return self._clock

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, key: object) -> bool:
        return key in self._nodes

    def get(self, key: Key) -> Any:
        return self._chunks.get(key)

    def node(self, key: Key) -> TreeNode | None:
        return self._nodes.get(key)

    def evictable_count(self) -> int:
        """Chunks an eviction could take now: unlocked ones (every one is a leaf in time)."""
        return len(self._nodes) - self._locked

    def is_pinned(self, key: Key) -> bool:
        return key in self._pinned

    # ------------------------------------------------------------------ locks
    def _lock(self, node: TreeNode) -> None:
        x: TreeNode | None = node
        while x is not None and x is not self.root:
            if x.lock_ref == 0:
                self._locked += 1
            x.lock_ref += 1
            x = x.parent

    def _unlock(self, node: TreeNode) -> None:
        x: TreeNode | None = node
        while x is not None and x is not self.root:
            x.lock_ref -= 1
            if x.lock_ref == 0:
                self._locked -= 1
            x = x.parent
        if node.lock_ref == 0 and not node.children:
            self._dirty[node] = None  # an evictable leaf again: offer it

    def pin(self, key: Key) -> None:
        """vLLM uses the chunk (``ref_cnt`` left 0): it and its prefix may not go."""
        node = self._nodes.get(key)
        if node is not None and key not in self._pinned:
            self._pinned.add(key)
            self._lock(node)

    def unpin(self, key: Key) -> None:
        """vLLM is done with the chunk (``ref_cnt`` back to 0)."""
        node = self._nodes.get(key)
        if node is not None and key in self._pinned:
            self._pinned.discard(key)
            self._unlock(node)

    # ------------------------------------------------------------------ changes
    def insert(
        self,
        key: Key,
        chunk: Any,
        parent: Key | None,
        *,
        end: int | None = None,
        start: int | None = None,
        pinned: bool = True,
        context: Any = None,
    ) -> TreeNode:
        """Add ``key`` under ``parent`` (None or not resident: the root).

        ``end`` is the chunk's last token position and ``start`` where it begins (vLLM's key
        positions); with them ``prefix_len`` and ``num_tokens`` count tokens, else chunks.
        ``context``: the storing request's, recorded on the node before ``on_insert``.
        """
        if key in self._nodes:
            raise ValueError(f"chunk {key!r} is already in the tree")
        above = self._nodes.get(parent, self.root) if parent is not None else self.root
        node = TreeNode(above, token_id(key), key, self._tick())
        if end is not None:
            node.num_tokens = max(1, end - (start if start is not None else 0))
            node.prefix_len = node.history_len = max(end, node.num_tokens)
        if context is not None:
            node.context = context
        above.children[key] = node
        self._nodes[key] = node
        self._chunks[key] = chunk
        if pinned:
            self._pinned.add(key)
            self._lock(node)
        if self._on_insert is not None:
            try:
                self._call(self._on_insert, node)
            except PolicyError:
                self._unlink_new(key, node)
                raise
        self._dirty[node] = None
        return node

    def _unlink_new(self, key: Key, node: TreeNode) -> None:
        if key in self._pinned:
            self._pinned.discard(key)
            self._unlock(node)
        self._dirty.pop(node, None)
        parent = node.parent
        assert parent is not None
        del parent.children[key]
        node.parent = None
        del self._nodes[key], self._chunks[key]

    def touch(self, keys: Sequence[Key], hits: Iterable[Key] = (), context: Any = None) -> None:
        """A request used ``keys`` (head to tail): stamp them; ``hits`` (reused) count a hit.

        ``context``: the request's, recorded on every node stamped, before ``on_hit``.
        """
        now = self._tick()
        nodes = self._nodes
        for key in keys:
            node = nodes.get(key)
            if node is not None:
                node.last_access_time = now
                self._dirty[node] = None
        reached = [nodes[k] for k in hits if k in nodes]
        for node in reached:
            node.hit_count += 1
        if context is not None:  # (a policy without uses_context never gets here)
            for key in keys:  # (hits are among them)
                node = nodes.get(key)
                if node is not None:
                    node.context = context
        if self._on_hit is not None:
            for node in reached:
                self._call(self._on_hit, node)

    def remove(self, key: Key) -> None:
        """Drop ``key`` (a store that failed): its children move up to its parent."""
        node = self._nodes.get(key)
        if node is None:
            raise KeyError(key)
        if self._on_evict is not None:
            self._call(self._on_evict, node)  # still linked: the policy can read its path
        if key in self._pinned:
            self._pinned.discard(key)
            self._unlock(node)
        parent = node.parent
        assert parent is not None
        if node.lock_ref:
            self._locked -= 1  # the locks of its subtree stay counted on the parent's path
        for child_key, child in node.children.items():
            child.parent = parent
            parent.children[child_key] = child
        node.children = {}
        del parent.children[key]
        node.parent = None
        self._dirty.pop(node, None)
        self._seq_of.pop(node, None)
        del self._nodes[key], self._chunks[key]
        if parent is not self.root and not parent.children and parent.lock_ref == 0:
            self._dirty[parent] = None

    def clear(self) -> None:
        """Forget every chunk, and start the policy afresh (its own state included)."""
        self._reset(self._make_policy())

    # ------------------------------------------------------------------ eviction
    def _entry(self, node: TreeNode) -> _Entry:
        try:
            score: Any = self._score(node)
        except Exception as e:
            raise self._error(f"score() raised {type(e).__name__}: {e}", e) from e
        width = len(score) if type(score) is tuple else 0
        ok = all(_is_real(x) for x in score) and width > 0 if width else _is_real(score)
        if not ok:
            raise self._error(
                f"score() returned {score!r} ({type(score).__name__}); a score must be a real "
                "number that is not NaN, or a non-empty tuple of such numbers")
        if self._width == -1:
            self._width = width
        elif width != self._width:
            raise self._error(f"score() returned {score!r}; scores must be numbers, or tuples "
                              "of one fixed length")
        self._seq += 1
        head = score if width else (score,)
        return (*head, node.last_access_time, self._seq, node)

    def _offer(self, node: TreeNode) -> None:
        entry = self._entry(node)
        self._seq_of[node] = entry[-2]
        heapq.heappush(self._heap, entry)

    def _evictable_leaf(self, node: TreeNode) -> bool:
        return node.lock_ref == 0 and not node.children and node.parent is not None

    def _flush(self) -> None:
        """Score every dirty evictable leaf; on an error the rest stay dirty."""
        if self._volatile:
            for node in self._nodes.values():
                if self._evictable_leaf(node):
                    self._dirty[node] = None
        while self._dirty:
            node = next(iter(self._dirty))
            if self._evictable_leaf(node):
                self._offer(node)
            del self._dirty[node]
        if len(self._heap) > 2 * len(self._seq_of) + 4096:
            live = [e for e in self._heap if self._seq_of.get(e[-1]) == e[-2]]
            heapq.heapify(live)
            self._heap = live

    def evict(self, n: int, protected: Iterable[Key] = ()) -> list[tuple[Key, Any]] | None:
        """Take exactly ``n`` leaves, lowest score first, none of ``protected``; or None.

        All or nothing: None (nothing changed) when fewer than ``n`` chunks can go, and a
        policy that raises leaves the tree as it was.
        """
        if n <= 0:
            return []
        self._flush()
        held = [self._nodes[k] for k in set(protected) if k in self._nodes]
        for node in held:
            self._lock(node)
        try:
            if self.evictable_count() < n:
                return None
            victims = self._take(n)
        finally:
            for node in held:
                self._unlock(node)
        out = []
        for node, _ in victims:
            key = node.value
            self._seq_of.pop(node, None)
            self._dirty.pop(node, None)
            del self._nodes[key]
            out.append((key, self._chunks.pop(key)))
        return out

    def _take(self, n: int) -> list[tuple[TreeNode, TreeNode]]:
        heap = self._heap
        victims: list[tuple[TreeNode, TreeNode]] = []
        popped: list[_Entry] = []
        try:
            while len(victims) < n:
                if not heap:
                    raise RuntimeError(f"{self.label}: the eviction heap ran dry with "
                                       f"{len(victims)} of {n} chunks taken (a radix-evict bug)")
                entry = heapq.heappop(heap)
                node: TreeNode = entry[-1]
                if self._seq_of.get(node) != entry[-2] or not self._evictable_leaf(node):
                    if self._seq_of.get(node) == entry[-2]:
                        del self._seq_of[node]  # locked or grown a child: re-offered later
                    continue
                parent = node.parent
                assert parent is not None
                if self._on_evict is not None:
                    try:
                        self._call(self._on_evict, node)
                    except PolicyError:
                        heapq.heappush(heap, entry)
                        raise
                del parent.children[node.value]
                node.parent = None
                victims.append((node, parent))
                popped.append(entry)
                if parent is not self.root and not parent.children and parent.lock_ref == 0:
                    self._offer(parent)
        except BaseException:
            for (node, parent), entry in zip(reversed(victims), reversed(popped), strict=True):
                parent.children[node.value] = node
                node.parent = parent
                self._seq_of[node] = entry[-2]
                heapq.heappush(heap, entry)
                if parent is not self.root:
                    self._dirty[parent] = None  # its entry above is stale now: rescore later
            raise
        return victims

    # ------------------------------------------------------------------ checks
    def problems(self) -> list[str]:
        """What is inconsistent (empty: nothing): for the tests, after every step."""
        out: list[str] = []
        seen = 0
        locked = 0
        stack = [self.root]
        while stack:
            x = stack.pop()
            for k, c in x.children.items():
                seen += 1
                if self._nodes.get(k) is not c:
                    out.append(f"tree node {k!r} is not the map's")
                if c.parent is not x:
                    out.append(f"{k!r}: parent link broken")
                stack.append(c)
            if x is self.root:
                continue
            own = 1 if x.value in self._pinned else 0
            want = own + sum(c.lock_ref for c in x.children.values())
            if x.lock_ref != want:
                out.append(f"{x.value!r}: lock_ref {x.lock_ref}, pins below say {want}")
            locked += x.lock_ref > 0
            if self._evictable_leaf(x) and x not in self._dirty and x not in self._seq_of:
                out.append(f"{x.value!r}: an evictable leaf neither offered nor dirty")
        if seen != len(self._nodes):
            out.append(f"{seen} nodes in the tree, {len(self._nodes)} in the map")
        if locked != self._locked:
            out.append(f"{locked} locked nodes, counted {self._locked}")
        if set(self._chunks) != set(self._nodes):
            out.append("chunk map and node map differ")
        return out
