"""SGLang's legacy tree (``radix_cache.RadixCache``) with radix-evict's clock and events.

The legacy tree stamps nodes with ``time.monotonic()`` seconds: the order of recency is
the unified tree's, but a policy that adds to a time (``reuse``'s credit, gdsf) counts in
logical ticks. So for a tree that runs a radix-evict policy the plugin keeps, beside
SGLang's stamps, the ticks SGLang's unified tree (and radix-evict's cache) would give:

- a lookup: one tick for the path, the matched node gets it and each ancestor 1e-5 less;
- an insert: a tick for the root, then one per node walked;
- a split: three ticks (the head's own, its creation tick, the tail's re-stamp); the head
  keeps the tail's creation time;
- a new leaf: two ticks (its access, its creation).

Where each event happens in SGLang 0.5.23's legacy tree: ``_match_prefix_helper`` is the
walk of ``match_prefix`` (and ``touch_prefix``, as in the unified tree; ``checkpoint``'s
re-match after its own insert is no lookup: the unified tree does none, so it stamps no
tick and delivers no hit);
``_split_node(key, child, split_len)`` returns the head, ``child`` stays the tail;
``_insert_helper`` creates the new leaf last and returns it. Its ``evict`` frees a
victim's KV before unlinking it, so for a policy with ``on_evict`` the plugin runs the
same eviction (every evictable leaf scored, lowest popped first, a parent left
childless and unlocked scored and pushed) calling ``on_evict`` before anything happens
to the victim.

For a policy with ``uses_context`` the plugin also records the request's context
(:mod:`radix_evict.sglang.context`), before the callbacks: ``match_prefix(params)`` with
``params.req`` and ``checkpoint(req, ...)`` hand it to the tree for the call; the walk then
records it on its stamped path (a lookup) or on the path it walked and the leaf it added
(an insert), and a split's head keeps the tail's.
"""

from __future__ import annotations

import heapq
import time
import types
from collections.abc import Callable
from typing import Any

from radix_evict.sglang import context
from radix_evict.sglang.adapter import LEGACY_ACCESS, LEGACY_CREATED, BridgedStrategy, LegacyNode
from radix_evict.sglang.events import bridge_of, events_of
from radix_evict.sglang.patching import Changes

Method = Callable[..., Any]
_CLOCK = "_radix_evict_clock"  # the tree's last tick
_OP = "_radix_evict_op"  # ("match" | "insert", clock at the start) while one runs
_QUIET = "_radix_evict_quiet"  # inside checkpoint: its re-match is no lookup


def _bridged(tree: Any) -> bool:
    return type(getattr(tree, "eviction_strategy", None)) is BridgedStrategy


def _depth(node: Any) -> int:
    """Nodes from the root to ``node``, the root excluded."""
    n = 0
    x = node.parent
    while x is not None:
        n += 1
        x = x.parent
    return n


def _match_prefix_helper(original: Method) -> Method:
    def _match_prefix_helper(self: Any, node: Any, key: Any) -> Any:
        if not _bridged(self):
            return original(self, node, key)
        setattr(self, _OP, ("match", getattr(self, _CLOCK, 0.0)))
        try:
            value, last = original(self, node, key)
        finally:
            setattr(self, _OP, None)
        if getattr(self, _QUIET, False):
            return value, last  # checkpoint's re-match: the unified tree has none to stamp
        t = getattr(self, _CLOCK, 0.0) + 1.0
        setattr(self, _CLOCK, t)
        path = []
        x = last
        while x is not None:
            setattr(x, LEGACY_ACCESS, t)
            t -= 0.00001
            if x.parent is not None:
                path.append(x)
            x = x.parent
        ctx = getattr(self, context.TREE_REQUEST, None)  # a lookup with a request
        if path and ctx is not None:
            context.record(path, ctx)
        ev = events_of(self)
        if path and ev is not None and ev.on_hit is not None:
            path.reverse()
            ev.hits(LegacyNode, path)
        return value, last

    return _match_prefix_helper


def _split_node(original: Method) -> Method:
    def _split_node(self: Any, key: Any, child: Any, split_len: int) -> Any:
        head = original(self, key, child, split_len)
        s = bridge_of(self)
        if s is None:
            return head
        if s.uses_context:
            context.inherit(head, child)
        op = getattr(self, _OP, None)
        if op is not None and op[0] == "insert":
            c = op[1] + 1.0 + _depth(head)  # the root's tick, then one per node walked
        else:
            c = getattr(self, _CLOCK, 0.0)
        setattr(head, LEGACY_ACCESS, c + 1.0)
        setattr(head, LEGACY_CREATED, getattr(child, LEGACY_CREATED, 0.0))
        setattr(child, LEGACY_ACCESS, c + 3.0)
        setattr(self, _CLOCK, c + 3.0)
        ev = events_of(self)
        if ev is not None and ev.on_split is not None:
            ev.split(LegacyNode, head, child)
        return head

    return _split_node


def _insert_helper(original: Method) -> Method:
    def _insert_helper(self: Any, node: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
        if not _bridged(self):
            return original(self, node, key, *args, **kwargs)
        clock0 = getattr(self, _CLOCK, 0.0)
        setattr(self, _OP, ("insert", clock0))
        split_clock = None
        try:
            matched, last = original(self, node, key, *args, **kwargs)
            if getattr(self, _CLOCK, 0.0) != clock0:
                split_clock = getattr(self, _CLOCK, 0.0)
        finally:
            setattr(self, _OP, None)
        leaf = last if matched < len(key) else None
        end = last.parent if leaf is not None else last
        path = []
        x = end
        while x is not None and x.parent is not None:
            path.append(x)
            x = x.parent
        clock = clock0 + 1.0
        setattr(self.root_node, LEGACY_ACCESS, clock)
        for i, x in enumerate(reversed(path)):
            clock += 1.0
            if split_clock is not None and i == len(path) - 1:
                clock = split_clock  # the head the split stamped; the tail too
            else:
                setattr(x, LEGACY_ACCESS, clock)
        if leaf is not None:
            setattr(leaf, LEGACY_ACCESS, clock + 1.0)
            setattr(leaf, LEGACY_CREATED, clock + 2.0)
            clock += 2.0
        setattr(self, _CLOCK, clock)
        ctx = getattr(self, context.TREE_REQUEST, None)  # an insert inside a checkpoint
        if ctx is not None:
            context.record(path, ctx)
            if leaf is not None:
                context.record((leaf,), ctx)
        if leaf is not None:
            ev = events_of(self)
            if ev is not None and ev.on_insert is not None:
                ev.insert(LegacyNode, leaf)
        return matched, last

    return _insert_helper


def _reads_context(tree: Any) -> bool:
    s = bridge_of(tree)
    return s is not None and s.uses_context


def _with_request(tree: Any, ctx: Any, call: Callable[[], Any]) -> Any:
    """``call()`` with the tree holding the request's context ``ctx`` (None: no request)."""
    prev = getattr(tree, context.TREE_REQUEST, None)
    setattr(tree, context.TREE_REQUEST, ctx)
    try:
        return call()
    finally:
        setattr(tree, context.TREE_REQUEST, prev)


def _match_prefix(original: Method) -> Method:
    def match_prefix(self: Any, params: Any) -> Any:
        if not _reads_context(self):
            return original(self, params)
        ctx = context.of_req(getattr(params, "req", None))
        return _with_request(self, ctx, lambda: original(self, params))

    return match_prefix


def _checkpoint(original: Method) -> Method:
    def checkpoint(self: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        setattr(self, _QUIET, True)
        try:
            if not _reads_context(self):
                return original(self, req, *args, **kwargs)
            ctx = context.at_checkpoint(req)
            return _with_request(self, ctx, lambda: original(self, req, *args, **kwargs))
        finally:
            setattr(self, _QUIET, False)

    return checkpoint


def _evict(original: Method, module: types.ModuleType) -> Method:
    def evict(self: Any, params: Any) -> Any:
        ev = events_of(self)
        if ev is None or ev.on_evict is None or self.disable:
            return original(self, params)
        start = time.perf_counter()
        get_priority = self.eviction_strategy.get_priority
        heap = [(get_priority(n), n) for n in self.evictable_leaves]
        heapq.heapify(heap)
        freed = 0
        while freed < params.num_tokens and heap:
            _, x = heapq.heappop(heap)
            ev.evict(LegacyNode, x)  # still linked, still holding its KV
            self.token_to_kv_pool_allocator.free_segment(x.value, start_pos=0)
            freed += len(x.value)
            self._delete_leaf(x)
            parent = x.parent
            if not parent.children and parent.lock_ref == 0:
                heapq.heappush(heap, (get_priority(parent), parent))
            self.kv_events.record_remove(x)
        self.update_eviction_metrics(freed, start)
        return module.EvictResult(num_tokens_evicted=freed)

    return evict


def install(module: types.ModuleType, changes: Changes) -> None:
    """Wrap the legacy ``RadixCache``'s event points (undone with ``changes``)."""
    tree = module.RadixCache
    wrappers: dict[str, Method] = {
        "match_prefix": _match_prefix(tree.__dict__["match_prefix"]),
        "_match_prefix_helper": _match_prefix_helper(tree.__dict__["_match_prefix_helper"]),
        "_split_node": _split_node(tree.__dict__["_split_node"]),
        "_insert_helper": _insert_helper(tree.__dict__["_insert_helper"]),
        "checkpoint": _checkpoint(tree.__dict__["checkpoint"]),
        "evict": _evict(tree.__dict__["evict"], module),
    }
    for name, wrapped in wrappers.items():
        wrapped.__wrapped__ = tree.__dict__[name]  # type: ignore[attr-defined]
        wrapped.__qualname__ = f"{tree.__qualname__}.{name}"
        changes.set_attr(tree, name, wrapped)
