"""A node of the hybrid tree: its tokens, and which components hold data on it.

Full attention's KV covers the node's whole key while the node is on device; with
a host tier (``host``) a node may keep its copies on host only (SGLang's
evicted-and-backed-up node). A sliding-window
component (SWA) may be gone from a node that keeps its full KV: SGLang calls
that a tombstone. A recurrent state (Mamba) sits only on the nodes where one was
saved. Each component has its own lock count (SGLang's ``ComponentData``,
``unified_cache/components/base.py``).
"""

from __future__ import annotations

import numpy as np

FULL, SWA, MAMBA = 0, 1, 2
COMPONENT_NAMES = ("full", "swa", "mamba")


class HybridNode:
    """One edge of the tree with its per-component presence and locks.

    ``last_access_time``, ``creation_time``, ``hit_count`` and ``priority`` are
    the fields the built-in eviction policies score; they move as SGLang's move.
    """

    __slots__ = (
        "children", "creation_time", "has", "hit_count", "host", "id", "key", "last_access_time",
        "lock", "parent", "priority", "swa_uuid",
    )  # fmt: skip

    def __init__(self, node_id: int, now: float, priority: int = 0) -> None:
        self.id = node_id
        self.children: dict[bytes, HybridNode] = {}
        self.parent: HybridNode | None = None
        self.key: np.ndarray = np.empty(0, dtype=np.int64)
        # Presence per component: full, swa, mamba.
        self.has = [True, False, False]
        # Presence of a host copy per component (a host tier only).
        self.host = [False, False, False]
        self.lock = [0, 0, 0]
        # The SWA lock's boundary mark: a release walks up to the node carrying it.
        self.swa_uuid: int | None = None
        self.last_access_time = now
        self.creation_time = now + 1.0
        self.hit_count = 0
        self.priority = priority

    @property
    def num_tokens(self) -> int:
        return len(self.key)

    def locked(self) -> bool:
        return self.lock[0] > 0 or self.lock[1] > 0 or self.lock[2] > 0

    def __repr__(self) -> str:
        present = "+".join(n for n, h in zip(COMPONENT_NAMES, self.has, strict=True) if h)
        on_host = "+".join(n for n, h in zip(COMPONENT_NAMES, self.host, strict=True) if h)
        host = f", host {on_host}" if on_host else ""
        return f"HybridNode(id={self.id}, tokens={len(self.key)}, {present or 'empty'}{host})"
