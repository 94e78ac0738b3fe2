"""SGLang's tree nodes seen through radix-evict's node contract, and a strategy around a policy.

A radix-evict policy reads ``last_access_time``, ``creation_time``, ``hit_count``,
``priority``, ``num_tokens``, ``prefix_len``, ``history_len``, ``lock_ref``, ``parent``,
``children`` and (one with ``uses_context``) ``context``. SGLang's nodes keep some of
these under other names:

- unified tree (``UnifiedTreeNode``, Python core): ``num_tokens`` is ``len(key)``; the
  depth and the branch high-water mark are ``_tlru_cached_prefix_len`` and
  ``_tlru_history_len``, which the core maintains only when told to (SGLang does so for
  ``tlru``; :mod:`radix_evict.sglang.routing` turns it on for every bridged policy);
  ``lock_ref`` is the full-KV component's.
- legacy tree (``radix_cache.TreeNode``): no depth fields, so ``prefix_len`` is summed up
  the path and ``history_len`` is the node's current depth (no high-water mark). Its own
  times are ``time.monotonic()`` seconds; a policy reads instead the logical ticks the
  plugin stamps beside them (:mod:`radix_evict.sglang.legacy_events`), radix-evict's clock.
- both: ``context`` is the :class:`~radix_evict.RequestContext` the plugin records beside
  SGLang's fields for a policy with ``uses_context`` (:mod:`radix_evict.sglang.context`),
  None on a node no such request touched.

A view compares equal to (and hashes as) any other view of the same SGLang node, so a
stateful policy can keep views in sets and dicts; ``key_bytes`` makes
:class:`~radix_evict.policies.fingerprint.PrefixFingerprints` work on them.

:class:`BridgedStrategy` is what SGLang's strategy registry returns for a radix-evict
policy: ``get_priority`` scores the node and appends ``last_access_time``, radix-evict's
tie rule (equal scores go least recently used first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from radix_evict.errors import PolicyError
from radix_evict.policies.contract import EvictionPolicy, Score
from radix_evict.sglang.context import NODE_CONTEXT

_FULL = 0  # ComponentType.FULL: the component whose lock protects a node's KV
# The logical ticks the plugin stamps on a legacy node (radix-evict's clock), beside
# SGLang's own monotonic seconds.
LEGACY_ACCESS = "_radix_evict_access"
LEGACY_CREATED = "_radix_evict_created"


class UnifiedNode:
    """A ``UnifiedTreeNode`` (SGLang's unified tree, Python core) as a radix-evict node."""

    __slots__ = ("_node",)

    def __init__(self, node: Any) -> None:
        self._node = node

    @property
    def last_access_time(self) -> float:
        return self._node.last_access_time

    @property
    def creation_time(self) -> float:
        return self._node.creation_time

    @property
    def hit_count(self) -> int:
        return self._node.hit_count

    @property
    def priority(self) -> int:
        return self._node.priority

    @property
    def num_tokens(self) -> int:
        key = self._node.key
        return len(key) if key is not None else 0

    @property
    def prefix_len(self) -> int:
        return self._node._tlru_cached_prefix_len

    @property
    def history_len(self) -> int:
        return self._node._tlru_history_len

    @property
    def lock_ref(self) -> int:
        return self._node.component_data[_FULL].lock_ref

    @property
    def context(self) -> Any:
        """The last request (with a context) that touched the node: a RequestContext, or None."""
        return getattr(self._node, NODE_CONTEXT, None)

    @property
    def parent(self) -> UnifiedNode | None:
        p = self._node.parent
        return UnifiedNode(p) if p is not None else None

    @property
    def children(self) -> dict[Any, UnifiedNode]:
        return {k: UnifiedNode(c) for k, c in self._node.children.items()}

    @property
    def key_bytes(self) -> bytes:
        """The node's tokens as int64 bytes (what prefix fingerprints read)."""
        key = self._node.key
        if key is None:
            return b""
        return np.asarray(key.raw_token_ids(), dtype=np.int64).tobytes()

    @property
    def sglang_node(self) -> Any:
        """The SGLang node itself (fields beyond the contract are SGLang's, unversioned)."""
        return self._node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnifiedNode) and other._node is self._node

    def __hash__(self) -> int:
        return id(self._node)

    def __repr__(self) -> str:
        return f"UnifiedNode(tokens={self.num_tokens}, prefix_len={self.prefix_len})"


class LegacyNode(UnifiedNode):
    """A ``radix_cache.TreeNode`` (SGLang's legacy tree) as a radix-evict node."""

    __slots__ = ()

    @property
    def last_access_time(self) -> float:
        return getattr(self._node, LEGACY_ACCESS, 0.0)

    @property
    def creation_time(self) -> float:
        return getattr(self._node, LEGACY_CREATED, 0.0)

    @property
    def prefix_len(self) -> int:
        n = 0
        x = self._node
        while x is not None and x.key is not None:
            n += len(x.key)
            x = x.parent
        return n

    @property
    def history_len(self) -> int:
        return self.prefix_len  # the legacy tree keeps no high-water mark

    @property
    def lock_ref(self) -> int:
        return self._node.lock_ref

    @property
    def parent(self) -> LegacyNode | None:
        p = self._node.parent
        return LegacyNode(p) if p is not None else None

    @property
    def children(self) -> dict[Any, LegacyNode]:  # type: ignore[override]
        return {k: LegacyNode(c) for k, c in self._node.children.items()}


def node_view(node: Any) -> UnifiedNode:
    """The radix-evict view of an SGLang node of either tree."""
    return UnifiedNode(node) if hasattr(node, "component_data") else LegacyNode(node)


class BridgedStrategy:
    """An SGLang eviction strategy that asks a radix-evict policy (lowest evicted first).

    ``events`` (None for a policy without lifecycle callbacks) is what the plugin's tree
    wrappers deliver SGLang's tree events through; ``uses_context`` (the policy's) tells
    them to record each request's context on the nodes it touches.
    """

    def __init__(self, policy: EvictionPolicy, events: Any = None) -> None:
        self.policy = policy
        self.name = policy.name
        self.events = events
        self.uses_context = bool(getattr(policy, "uses_context", False))
        # The views below stand in for TreeNode: they have the fields a score reads.
        self._score: Callable[[Any], Score] = policy.score
        self._view: type[UnifiedNode] | None = None  # chosen by the first node seen

    def get_priority(self, node: Any) -> Score:
        view = self._view
        if view is None:
            view = self._view = UnifiedNode if hasattr(node, "component_data") else LegacyNode
        v = view(node)
        try:
            score = self._score(v)
        except PolicyError:
            raise
        except Exception as e:
            raise self._failed(e) from e
        if type(score) is tuple:
            return (*score, v.last_access_time)
        return (score, v.last_access_time)

    def _failed(self, e: Exception) -> PolicyError:
        from radix_evict.sglang.events import policy_error  # the one message format

        return policy_error(self.policy, "score()", e)

    def __repr__(self) -> str:
        return f"BridgedStrategy({self.policy!r})"
