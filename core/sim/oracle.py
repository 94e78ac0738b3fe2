"""The offline bound: Belady's rule replayed through the same cache and driver.

The oracle knows every arrival in advance. It scores an evictable leaf by
when it is next used, ``-next_use``, so the driver evicts the leaf whose next
use lies farthest in the future first (a leaf never used again goes before
any other), under the cache's usual rules: leaves only, locked nodes never,
whole nodes, ties to the least recently used.

*Used* means an arrival's page-aligned prompt shares at least the leaf's first
page with the leaf's path: such a request would hit at least part of it.
The uses of every prefix come from :class:`FutureIndex`, a compressed trie of
all arrival prompts whose nodes list, in order, the arrivals that pass
through them; a leaf's next use is one ``bisect`` in the list of the trie node
its first page ends in.

Why the incremental heap stays exact: a leaf's next use depends on its path
and the current arrival only. Its path changes only when the leaf is split,
which re-offers it; and once the current arrival reaches its next use, that
arrival's ``match_prefix`` walks into the leaf, which re-offers it (or splits
it) too. So every entry in the heap still holds its leaf's true score.

The oracle is a reference, never a servable policy: it is not registered, so
no config, ``validate``, ``lint`` or serving plugin can name it. Only
:func:`replay_oracle` builds one, and the replay reports it as ``oracle``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from radix_evict.cache.tree import TOKEN_BYTES, TreeNode, common_prefix_len, key_view
from radix_evict.policies.contract import EvictionPolicy
from radix_evict.policies.derive import WorkloadStats
from radix_evict.sim.workloads import Event, Request, Workload

ORACLE = "oracle"


class _FutureNode:
    """A compressed-trie node: its edge's token bytes and the arrivals through it."""

    __slots__ = ("children", "key", "uses")

    def __init__(self, key: bytes, uses: list[int]) -> None:
        self.key = key
        self.uses = uses  # arrival indices, ascending
        self.children: dict[bytes, _FutureNode] = {}


# Where a prefix ends in the future trie: (node, bytes of node.key it covers).
Location = tuple[_FutureNode, int]


class FutureIndex:
    """Every arrival's page-aligned prompt, in arrival order, as a compressed trie.

    A prompt that passes into an edge covers all of it (prompts end on nodes),
    so the arrivals that share a prefix ``p`` are exactly those listed on the
    trie node whose edge ``p`` ends in.
    """

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self.root = _FutureNode(b"", [])
        self.arrivals = 0
        self._pb = page_size * TOKEN_BYTES

    def add(self, prompt: npt.NDArray[np.int64]) -> None:
        """Append the next arrival's prompt (only its page-aligned part counts)."""
        i = self.arrivals
        self.arrivals += 1
        P = self.page_size
        n = len(prompt) // P * P
        if not n:
            return
        kv = key_view(prompt, n)
        nb, pb = n * TOKEN_BYTES, self._pb
        node, off = self.root, 0
        while off < nb:
            first = kv[off : off + pb].tobytes()
            child = node.children.get(first)
            if child is None:
                node.children[first] = _FutureNode(kv[off:].tobytes(), [i])
                return
            ck = child.key
            end = off + len(ck)
            if end > nb or not ck.startswith(kv[off:end]):
                m = common_prefix_len(ck, kv, off) // P * P * TOKEN_BYTES
                head = _FutureNode(ck[:m], child.uses.copy())
                child.key = ck[m:]
                head.children[child.key[:pb]] = child
                node.children[first] = head
                child = head
            child.uses.append(i)
            node = child
            off += len(child.key)

    def advance(self, at: Location, key: bytes) -> Location | None:
        """Where the prefix at ``at`` extended by ``key`` ends; None if no arrival has it."""
        node, j = at
        i, n = 0, len(key)
        while i < n:
            if j == len(node.key):
                child = node.children.get(key[i : i + self._pb])
                if child is None:
                    return None
                node, j = child, 0
            take = min(len(node.key) - j, n - i)
            if not node.key.startswith(key[i : i + take], j):
                return None
            i += take
            j += take
        return node, j


class OraclePolicy(EvictionPolicy):
    """Belady's rule on evictable leaves: farthest next use first (``-next_use``)."""

    name = ORACLE

    def __init__(self, future: FutureIndex) -> None:
        super().__init__()
        self.future = future
        self.now = -1  # the arrival being (or last) served; the replay's workload sets it
        self.never = future.arrivals + 1  # the next use of a prefix no later arrival has
        self._pb = future.page_size * TOKEN_BYTES
        self._where: dict[TreeNode, Location | None] = {}

    def next_use(self, node: TreeNode) -> int:
        """Index of the first arrival after ``now`` that shares ``node``'s first page."""
        parent = node.parent
        if parent is None:
            return self.never
        at = self._location(parent)
        if at is not None:
            at = self.future.advance(at, node.key_bytes[: self._pb])
        if at is None:
            return self.never
        uses = at[0].uses
        k = bisect.bisect_right(uses, self.now)
        return uses[k] if k < len(uses) else self.never

    def score(self, node: TreeNode) -> int:
        return -self.next_use(node)

    def on_evict(self, node: TreeNode) -> None:
        """Drop the evicted node's memo (a lifecycle callback: the memo would only grow)."""
        self._where.pop(node, None)

    def _location(self, node: TreeNode) -> Location | None:
        """Where the prefix ``node`` ends lies in the future trie (memoised per node).

        A node object ends the same prefix for its whole life (a split gives the
        head to a new node), so the memo never goes stale.
        """
        where = self._where
        if node in where:
            return where[node]
        chain: list[TreeNode] = []
        x: TreeNode | None = node
        while x is not None and x not in where:
            if x.parent is None:  # the root
                where[x] = (self.future.root, 0)
                break
            chain.append(x)
            x = x.parent
        for y in reversed(chain):
            assert y.parent is not None
            up = where[y.parent]
            where[y] = None if up is None else self.future.advance(up, y.key_bytes)
        return where[node]


class _Clairvoyant(Workload):
    """``workload`` whose event stream tells the oracle which arrival is being served."""

    def __init__(self, inner: Workload, oracle: OraclePolicy) -> None:
        self.inner = inner
        self.oracle = oracle
        self.name = inner.name
        self.seed = inner.seed
        self.params = inner.params
        self.default_pool_tokens = inner.default_pool_tokens

    @property
    def num_requests(self) -> int:
        return self.inner.num_requests

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        return self.inner.growth_samples()

    def stats(self) -> WorkloadStats:
        return self.inner.stats()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def events(self) -> Iterator[Event]:
        oracle = self.oracle
        i = 0
        for ev in self.inner.events():
            if ev.kind == "arrive":
                oracle.now = i
                i += 1
            yield ev


# The pool-independent work of oracle replays, kept while :func:`sharing` is open: a
# FutureIndex is only read by the replays (OraclePolicy keeps its own clock and memo), so
# every replay of one workload, page size and order of uses can share one.
_shared: dict[tuple[Any, ...], Any] | None = None


@contextmanager
def sharing() -> Iterator[None]:
    """Within: oracle replays of one workload share its future index and prompts.

    Each index is built once per workload, page size and order of uses, and the
    timed oracle's prompts once per workload, instead of once per replay (pool
    size); the replays are the same, figure for figure. Everything is dropped on
    exit: the prompts of a 145M-token trace take 1.2 GB.
    """
    global _shared
    outer = _shared
    _shared = {} if outer is None else outer
    try:
        yield
    finally:
        _shared = outer


def _kept(key: tuple[Any, ...]) -> Any:
    return None if _shared is None else _shared.get(key)


def _keep(key: tuple[Any, ...], value: Any) -> None:
    if _shared is not None:
        _shared[key] = value


def future_of(workload: Workload, page_size: int) -> FutureIndex:
    """Every arrival's prompt, in the order the replay will see them."""
    order = _kept(("arrivals", id(workload)))
    prompts = _kept(("prompts", id(workload)))
    if order is not None and prompts is not None:
        return future_for_order(workload, prompts, list(order), page_size)
    if order is not None:
        found = _kept(("future", id(workload), page_size, order))
        if found is not None:
            return found
    future = FutureIndex(page_size)
    rids: list[str] = []
    for ev in workload.events():
        if ev.kind == "arrive":
            future.add(ev.request.prompt)
            rids.append(ev.request.rid)
    _keep(("arrivals", id(workload)), tuple(rids))
    _keep(("future", id(workload), page_size, tuple(rids)), future)
    return future


def prompts_by_rid(workload: Workload) -> dict[str, npt.NDArray[np.int64]]:
    """Every request's prompt by id, in arrival order (a request's tokens never depend on time)."""
    found = _kept(("prompts", id(workload)))
    if found is not None:
        return found
    prompts = {req.rid: req.prompt for req in workload.requests()}
    _keep(("prompts", id(workload)), prompts)
    _keep(("arrivals", id(workload)), tuple(prompts))
    return prompts


def future_for_order(workload: Workload, prompts: dict[str, npt.NDArray[np.int64]],
                     order: list[str], page_size: int) -> FutureIndex:
    """The index of ``workload``'s ``prompts`` in ``order``: one already built while
    :func:`sharing`, if any (:func:`future_of`'s too: the arrival order is the first
    order the timed oracle foresees)."""
    key = ("future", id(workload), page_size, tuple(order))
    found = _kept(key)
    if found is not None:
        return found
    future = FutureIndex(page_size)
    for rid in order:
        future.add(prompts[rid])
    _keep(key, future)
    return future


def oracle_for_order(workload: Workload, prompts: dict[str, npt.NDArray[np.int64]],
                     order: list[str], page_size: int
                     ) -> tuple[OraclePolicy, Callable[[Request], None]]:
    """A Belady oracle that foresees ``workload``'s requests admitted in ``order``, and its
    clock (``prompts``: :func:`prompts_by_rid`).

    The timed replay calls the clock as it first admits each request; the
    oracle's ``now`` becomes that request's place in ``order``.
    """
    future = future_for_order(workload, prompts, order, page_size)
    index = {rid: i for i, rid in enumerate(order)}
    oracle = OraclePolicy(future)

    def clock(req: Request) -> None:
        oracle.now = index[req.rid]

    return oracle, clock


def oracle_workload(workload: Workload, page_size: int) -> tuple[Workload, OraclePolicy]:
    """A Belady oracle for ``workload`` and the workload wrapped to drive its clock."""
    oracle = OraclePolicy(future_of(workload, page_size))
    return _Clairvoyant(workload, oracle), oracle
