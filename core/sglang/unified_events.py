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

Each wrapper costs one attribute test when the tree's policy defines no callback. The
Rust core runs no radix-evict policy (:mod:`radix_evict.sglang.routing` sends them all
here), so it needs none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from radix_evict.sglang.adapter import UnifiedNode
from radix_evict.sglang.events import events_of
from radix_evict.sglang.patching import Changes

Method = Callable[..., Any]


def _match_prefix(original: Method) -> Method:
    def match_prefix(self: Any, params: Any) -> Any:
        result = original(self, params)
        ev = events_of(self)
        if ev is not None and ev.on_hit is not None:
            root = self.root_node
            x = self.node_by_id(result.best_match_node)
            path = []
            while x is not None and x is not root:
                path.append(x)
                x = x.parent
            if path:
                path.reverse()
                ev.hits(UnifiedNode, path)
        return result

    return match_prefix


def _split_node(original: Method) -> Method:
    def _split_node(self: Any, key: Any, child: Any, split_len: int) -> Any:
        out = original(self, key, child, split_len)
        ev = events_of(self)
        if ev is not None and ev.on_split is not None:
            ev.split(UnifiedNode, out[0], child)
        return out

    return _split_node


def _insert_tail_step(original: Method) -> Method:
    def _insert_tail_step(self: Any, state: Any) -> None:
        original(self, state)
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
        original = core.__dict__[name]
        wrapped = wrap(original)
        wrapped.__wrapped__ = original  # type: ignore[attr-defined]
        wrapped.__qualname__ = f"{core.__qualname__}.{name}"
        changes.set_attr(core, name, wrapped)
