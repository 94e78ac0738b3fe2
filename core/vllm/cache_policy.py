"""The vLLM ``CachePolicy`` that keeps offloaded chunks in a :class:`ChunkTree`.

Imports no vLLM at module level: :func:`vllm_cache_policy_base` joins the methods here with
vLLM 0.33.0's ``CachePolicy`` when vLLM first asks for a ``radix_evict_<policy>`` class
(:func:`radix_evict.vllm.policy.policy_class`).

What vLLM's manager (``cpu/manager.py``) calls, and what the tree makes of it:

- ``on_request_access(keys, req)``: the request's keys as it first meets them; kept per
  request with their positions (``req.get_offload_key_position``), to link chunks, and
  the resident ones stamped as used now (a request reading a prefix keeps it warm).
- ``insert(key, chunk, req)``: a new chunk (``ref_cnt`` -1, being written), linked under
  the nearest chunk before it that this request met and the tier holds; pinned.
- ``mark_evictable`` / ``mark_non_evictable``: ``ref_cnt`` reached / left 0: unpin / pin.
- ``on_request_finished(key_groups, insertion_only, reused, req)``: the request's keys,
  head to tail, are stamped as used now; ``reused`` ones count a hit (``on_hit``).
- ``touch(keys, req)``: stamped as used, no hit. ``on_store_miss``: nothing to stamp.
- ``evict(n, protected)``: exactly ``n`` leaves the policy ranks lowest, none protected or
  pinned, nor any prefix of one; or None (nothing changed).
- ``remove(key)``: a store that failed; ``clear()``: everything, the policy's state too.

For a policy with ``uses_context``, ``insert``, ``touch``, ``on_request_access`` and
``on_request_finished`` also record the request's
:class:`~radix_evict.RequestContext` (:mod:`radix_evict.vllm.context`: its id, and what
the client sent in ``kv_transfer_params``) on the chunks they create or stamp. For any
other policy no context is built: one attribute test per call.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from radix_evict.policies.registry import registry
from radix_evict.vllm.config import launch_extra_config, radix_config
from radix_evict.vllm.context import request_context
from radix_evict.vllm.tree import ChunkTree, Key


@dataclass
class _Seen:
    """The keys one request has met, per KV cache group, by position (or arrival)."""

    generation: int
    positions: dict[int, list[int]] = field(default_factory=dict)  # sorted, per group
    at: dict[tuple[int, int], Key] = field(default_factory=dict)  # (group, position) -> key
    arrival: dict[int, list[Key]] = field(default_factory=dict)  # keys without a position
    known: set[Key] = field(default_factory=set)


@dataclass
class _RequestKeys:
    """Per-request state, one :class:`_Seen` per policy object (several tiers may share)."""

    by_owner: dict[int, _Seen] = field(default_factory=dict)


class RadixEvictCachePolicy:
    """A radix-evict policy ranking vLLM's offloaded chunks as leaves of a prefix tree.

    The methods of vLLM's ``CachePolicy``; :func:`vllm_cache_policy_base` makes it one
    (and supplies vLLM's key helpers, ``group_of`` and ``order_keys``).
    """

    radix_evict_policy: ClassVar[str] = ""
    cache_capacity: int  # set by vLLM's CachePolicy.__init__
    group_of: Callable[[Key], int]
    order_keys: Callable[[Sequence[Sequence[Key]], Any], list[Key]]

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)  # type: ignore[call-arg]  # vLLM's CachePolicy
        policy = self.radix_evict_policy
        extra = launch_extra_config(type(self).__name__)
        config = radix_config(extra, policy) if extra is not None else None
        spec = registry.get(policy)
        first = registry.load_policy(policy, config)  # strict: PolicyConfigError here
        made = [first]

        def make() -> Any:
            return made.pop() if made else registry.load_policy(policy, config)

        self.radix_eviction_config = config
        self.tree = ChunkTree(make, spec.source, spec.distribution)
        self._generation = 0

    # ------------------------------------------------------------------ per request
    def _seen(self, req_context: Any) -> _Seen:
        state = req_context.get_state(_RequestKeys)
        if state is None:
            state = _RequestKeys()
            req_context.set_state(state)
        seen = state.by_owner.get(id(self))
        if seen is None or seen.generation != self._generation:
            seen = state.by_owner[id(self)] = _Seen(self._generation)
        return seen

    def _meet(self, seen: _Seen, key: Key, req_context: Any) -> None:
        if key in seen.known:
            return
        seen.known.add(key)
        group = self.group_of(key)
        pos = req_context.get_offload_key_position(key)
        if pos is None:
            seen.arrival.setdefault(group, []).append(key)
            return
        bisect.insort(seen.positions.setdefault(group, []), pos)
        seen.at[(group, pos)] = key

    def _parent(self, seen: _Seen, key: Key, req_context: Any) -> tuple[Key | None, int | None,
                                                                         int | None]:
        """(nearest resident predecessor, this chunk's end, its start) for ``key``."""
        group = self.group_of(key)
        pos = req_context.get_offload_key_position(key)
        if pos is None:
            order = seen.arrival.get(group, [])
            i = order.index(key) if key in order else len(order)
            for k in reversed(order[:i]):
                if k in self.tree:
                    return k, None, None
            return None, None, None
        positions = seen.positions.get(group, [])
        i = bisect.bisect_left(positions, pos)
        start = positions[i - 1] if i > 0 else 0
        for p in reversed(positions[:i]):
            k = seen.at[(group, p)]
            if k in self.tree:
                return k, pos, start
        return None, pos, start

    # ------------------------------------------------------------------ CachePolicy
    def get(self, key: Key) -> Any:
        return self.tree.get(key)

    def insert(self, key: Key, chunk: Any, req_context: Any) -> None:
        seen = self._seen(req_context)
        self._meet(seen, key, req_context)
        parent, end, start = self._parent(seen, key, req_context)
        tree = self.tree
        tree.insert(key, chunk, parent, end=end, start=start, pinned=chunk.ref_cnt != 0,
                    context=request_context(req_context) if tree.uses_context else None)

    def remove(self, key: Key) -> None:
        self.tree.remove(key)

    def touch(self, keys: Iterable[Key], req_context: Any) -> None:
        tree = self.tree
        tree.touch(list(keys),
                   context=request_context(req_context) if tree.uses_context else None)

    def on_store_miss(self, keys: Iterable[Key], req_context: Any) -> None:
        """A miss is not a use of anything the tier holds: nothing to stamp."""

    def on_request_access(self, keys: Iterable[Key], req_context: Any) -> None:
        seen = self._seen(req_context)
        keys = list(keys)
        for key in keys:
            self._meet(seen, key, req_context)
        tree = self.tree  # in use now (as vLLM's LRU ranks it); the finish commits
        tree.touch(keys, context=request_context(req_context) if tree.uses_context else None)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[Key]],
        insertion_only_keys: set[Key],
        reused_keys: set[Key],
        req_context: Any,
    ) -> None:
        ordered = self.order_keys(key_groups, req_context)
        tree = self.tree
        tree.touch(ordered, [k for k in ordered if k in reused_keys],
                   context=request_context(req_context) if tree.uses_context else None)

    def evict(self, n: int, protected: set[Key]) -> list[tuple[Key, Any]] | None:
        return self.tree.evict(n, protected)

    def clear(self) -> None:
        self.tree.clear()
        self._generation += 1

    def mark_evictable(self, key: Key) -> None:
        self.tree.unpin(key)

    def mark_non_evictable(self, key: Key) -> None:
        self.tree.pin(key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tree.policy!r}, capacity={self.cache_capacity})"


@functools.cache
def vllm_cache_policy_base() -> type[Any]:
    """vLLM's ``CachePolicy`` with :class:`RadixEvictCachePolicy`'s methods: the base of every
    ``radix_evict_<policy>`` class. The one place radix-evict imports vLLM's offload code."""
    from vllm.v1.kv_offload.base import get_offload_group_idx
    from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, order_request_keys

    return type("RadixEvictVllmCachePolicy", (RadixEvictCachePolicy, CachePolicy), {
        "__module__": __name__,
        "group_of": staticmethod(get_offload_group_idx),
        "order_keys": staticmethod(order_request_keys),
    })
