"""The model tree of the one-pass curve: its nodes, the requests in flight, and the result.

See :mod:`radix_evict.sim.curve.stack` for what each field means to the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from radix_evict.cache.tree import TOKEN_BYTES

__all__ = ["Flight", "Node", "StackPass"]


class Node:
    """A node of the model tree: a run of pages, its stamp, and its per-size state."""

    __slots__ = ("allow", "alts", "children", "end", "glue_down", "glue_up", "key", "ntok",
                 "parent", "pend", "pins", "stamp")

    def __init__(self, parent: Node | None, key: bytes, end: int, full: int) -> None:
        self.parent = parent
        self.key = key
        self.ntok = len(key) // TOKEN_BYTES
        self.end = end  # tokens from the root through this node
        self.children: dict[bytes, Node] = {}
        self.stamp = -1
        self.allow = full  # sizes where this node may be cached
        self.pins = 0  # requests in flight that matched through it
        self.glue_up = 0  # sizes where it is one cache node with its parent
        self.glue_down = 0  # sizes where a child is one cache node with it
        # (stamp, sizes): where it sits at sizes that a touch did not refresh
        self.alts: tuple[tuple[int, int], ...] = ()
        self.pend: list[int] | None = None  # per size: requests in flight with a row copy


@dataclass
class Flight:
    """A request between its arrival and its finish."""

    matched: int  # tokens of its prompt the model tree held at arrival (pinned)
    rest: int  # the rest of its row: rounded prompt + output tokens past ``matched``
    ends: list[int]  # its path at arrival, root first: where each node ended
    masks: list[int]  # ... and the sizes where it hit that node


@dataclass
class StackPass:
    """What one pass found, per size (index into the sorted sizes)."""

    sizes: list[int]
    hits: npt.NDArray[np.int64]  # (requests, sizes): prompt tokens hit
    prompts: npt.NDArray[np.int64]  # (requests,): prompt tokens
    evicted: list[int]
    evict_calls: list[int]
    inexact: list[str | None]  # why the pass cannot stand for the per-size replay, or None
