"""A stateful policy's lifecycle callbacks, called with SGLang's tree events.

radix-evict's own cache calls ``on_hit``, ``on_split``, ``on_insert`` and ``on_evict``
(:mod:`radix_evict.policies.lifecycle` says when and with what). Inside SGLang the plugin
wraps the tree methods where each event happens (:mod:`radix_evict.sglang.unified_events`
for the unified tree's Python core, :mod:`radix_evict.sglang.legacy_events` for the legacy
``RadixCache``) and calls the policy through an :class:`Events` with SGLang's nodes seen
as radix-evict nodes (:mod:`radix_evict.sglang.adapter`), in radix-evict's order:

- a lookup: its splits while it walks (``on_split(head, tail)``), then, once the path is
  stamped, ``on_hit`` for every matched node, root excluded, shallow to deep;
- an insert: the split of the node it diverges inside (if any), then ``on_insert`` of
  the new leaf once it is linked, counted and stamped;
- an eviction: ``on_evict(victim)`` while the victim is still linked and holds its KV,
  before its parent is scored again.

A callback that raises fails that cache operation with a
:class:`~radix_evict.errors.PolicyError` naming the policy and its distribution (its
exception is the ``__cause__``). The event is delivered after SGLang's change to the tree
is complete (an eviction: before it starts), so the tree is left as SGLang's own
invariants require: what was done stays done, nothing is half done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from radix_evict.errors import PolicyError
from radix_evict.policies.contract import EvictionPolicy, callbacks_of
from radix_evict.policies.resolve import policy_origin
from radix_evict.sglang.adapter import BridgedStrategy, UnifiedNode


def policy_error(policy: EvictionPolicy[Any], what: str, e: BaseException) -> PolicyError:
    """The error for ``policy``'s ``what`` raising ``e`` inside SGLang (names its origin)."""
    source, distribution = policy_origin(policy)
    origin = f" from {source}" if source else ""
    named = repr(policy.name) if policy.name else f"{type(policy).__qualname__} (no name)"
    err = PolicyError(
        f"policy {named}{origin}: {what} raised {type(e).__name__}: {e} (inside SGLang's "
        "radix tree; the cache operation failed, the tree is consistent)",
        policy=policy.name,
        distribution=distribution,
    )
    err.__cause__ = e
    return err


class Events:
    """The callbacks one policy defines, called with views of SGLang's nodes."""

    __slots__ = ("on_evict", "on_hit", "on_insert", "on_split", "policy")

    def __init__(self, policy: EvictionPolicy[Any]) -> None:
        self.policy = policy
        cbs = callbacks_of(policy)
        self.on_hit = cbs.on_hit
        self.on_split = cbs.on_split
        self.on_insert = cbs.on_insert
        self.on_evict = cbs.on_evict

    def hits(self, view: type[UnifiedNode], nodes: Iterable[Any]) -> None:
        fn = self.on_hit
        assert fn is not None
        for n in nodes:
            self._call(fn, "on_hit", view(n))

    def split(self, view: type[UnifiedNode], head: Any, tail: Any) -> None:
        fn = self.on_split
        assert fn is not None
        self._call(fn, "on_split", view(head), view(tail))

    def insert(self, view: type[UnifiedNode], leaf: Any) -> None:
        fn = self.on_insert
        assert fn is not None
        self._call(fn, "on_insert", view(leaf))

    def evict(self, view: type[UnifiedNode], victim: Any) -> None:
        fn = self.on_evict
        assert fn is not None
        self._call(fn, "on_evict", view(victim))

    def _call(self, fn: Callable[..., Any], what: str, *args: Any) -> None:
        try:
            fn(*args)
        except PolicyError:
            raise  # already names the policy
        except Exception as e:
            raise policy_error(self.policy, what, e) from e


def make_events(policy: EvictionPolicy[Any]) -> Events | None:
    """The events to deliver to ``policy`` (None: it defines no callback)."""
    return Events(policy) if any(callbacks_of(policy)) else None


def events_of(tree: Any) -> Events | None:
    """The events of the policy SGLang's ``tree`` runs (None: none to deliver)."""
    strategy = getattr(tree, "eviction_strategy", None)
    if type(strategy) is BridgedStrategy:
        return strategy.events
    return None


def bridge_of(tree: Any) -> BridgedStrategy | None:
    """The radix-evict strategy SGLang's ``tree`` runs (None: one of SGLang's own)."""
    strategy = getattr(tree, "eviction_strategy", None)
    return strategy if type(strategy) is BridgedStrategy else None
