"""SGLang's unified tree (Python core, ``UnifiedTreeCore``) delivers its events to a policy.

Where each event happens in SGLang 0.5.23's ``unified_tree_core``:

- hit: ``match_prefix`` walks the key, splitting the node it ends inside, then stamps
  the path from its best match up to the root; the hits are that stamped path;
- split: ``_split_node(key, child, split_len)`` returns the new parent (the head) and
  leaves ``child`` (same object) as the tail, for lookups, inserts and components alike;
- insert: ``_insert_tail_step(state)`` ends every insert walk; ``state.is_new_leaf`` says
  a leaf was added (``state.target_node``), by then counted and stamped;
- evict: ``_delete_unbacked_device_leaf(node, ...)`` removes a device leaf that has no
  host copy (the only kind a tree without HiCache has), before it frees anything.

For a policy with ``uses_context`` the same points record the request's context
(:mod:`radix_evict.sglang.context`) before the callbacks run: a lookup with a request
(``params.req``) on its stamped path, an insert inside ``UnifiedRadixCache.checkpoint``
(which :func:`install_checkpoint` wraps: it hands the tree core the request's context for
the call) on the path it walked and the leaf it added, a split's head the tail's.

Each wrapper costs one attribute test when the tree's policy defines no callback and
reads no context. The Rust core runs no radix-evict policy
(:mod:`radix_evict.sglang.routing` sends them all here), so it needs none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from radix_evict.sglang import context
from radix_evict.sglang.adapter import UnifiedNode
from radix_evict.sglang.events import bridge_of, events_of
from radix_evict.sglang.patching import Changes

Method = Callable[..., Any]


def _path(tree: Any, node: Any) -> list[Any]:
    """``node`` and its ancestors, root excluded, shallow to deep."""
    root = tree.root_node
    path = []
    while node is not None and node is not root:
        path.append(node)
        node = node.parent
    path.reverse()
    return path


def _match_prefix(original: Method) -> Method:
    def match_prefix(self: Any, params: Any) -> Any:
        result = original(self, params)
        s = bridge_of(self)
        if s is None:
            return result
        ev = s.events
        hits = ev is not None and ev.on_hit is not None
        ctx = context.of_req(getattr(params, "req", None)) if s.uses_context else None
        if hits or ctx is not None:
            path = _path(self, self.node_by_id(result.best_match_node))
            if path:
                if ctx is not None:
                    context.record(path, ctx)
                if hits:
                    assert ev is not None
                    ev.hits(UnifiedNode, path)
        return result

    return match_prefix


def _split_node(original: Method) -> Method:
    def _split_node(self: Any, key: Any, child: Any, split_len: int) -> Any:
        out = original(self, key, child, split_len)
        s = bridge_of(self)
        if s is not None:
            if s.uses_context:
                context.inherit(out[0], child)
            ev = s.events
            if ev is not None and ev.on_split is not None:
                ev.split(UnifiedNode, out[0], child)
        return out

    return _split_node


def _insert_tail_step(original: Method) -> Method:
    def _insert_tail_step(self: Any, state: Any) -> None:
        original(self, state)
        ctx = getattr(self, context.TREE_REQUEST, None)  # set inside a checkpoint only
        if ctx is not None:
            context.record(_path(self, state.target_node), ctx)
        if state.is_new_leaf:
            ev = events_of(self)
            if ev is not None and ev.on_insert is not None:
                ev.insert(UnifiedNode, state.target_node)

    return _insert_tail_step


def _delete_unbacked_device_leaf(original: Method) -> Method:
    def _delete_unbacked_device_leaf(self: Any, node: Any, *args: Any, **kwargs: Any) -> None:
        ev = events_of(self)
        if ev is not None and ev.on_evict is not None:
            ev.evict(UnifiedNode, node)  # still linked, still holding its KV
        original(self, node, *args, **kwargs)

    return _delete_unbacked_device_leaf


WRAPPERS: dict[str, Callable[[Method], Method]] = {
    "match_prefix": _match_prefix,
    "_split_node": _split_node,
    "_insert_tail_step": _insert_tail_step,
    "_delete_unbacked_device_leaf": _delete_unbacked_device_leaf,
}


def install(core: type, changes: Changes) -> None:
    """Wrap ``UnifiedTreeCore``'s event points (undone with ``changes``)."""
    for name, wrap in WRAPPERS.items():
        _wrap(core, name, wrap, changes)


def _checkpoint(original: Method) -> Method:
    def checkpoint(self: Any, req: Any, *args: Any, **kwargs: Any) -> Any:
        core = getattr(self, "tree_core", None)
        s = bridge_of(core)
        if s is None or not s.uses_context:
            return original(self, req, *args, **kwargs)
        prev = getattr(core, context.TREE_REQUEST, None)
        setattr(core, context.TREE_REQUEST, context.at_checkpoint(req))
        try:
            return original(self, req, *args, **kwargs)
        finally:
            setattr(core, context.TREE_REQUEST, prev)

    return checkpoint


def install_checkpoint(cache: type, changes: Changes) -> None:
    """Wrap ``UnifiedRadixCache.checkpoint``: its inserts carry the request's context."""
    _wrap(cache, "checkpoint", _checkpoint, changes)


def _wrap(cls: type, name: str, wrap: Callable[[Method], Method], changes: Changes) -> None:
    original = cls.__dict__[name]
    wrapped = wrap(original)
    wrapped.__wrapped__ = original  # type: ignore[attr-defined]
    wrapped.__qualname__ = f"{cls.__qualname__}.{name}"
    changes.set_attr(cls, name, wrapped)
