"""Tree nodes and token keys.

Keys are kept as ``bytes`` of int64 tokens: ``bytes.startswith`` compares a
whole node key in one memcmp and a page's bytes are a hashable child key, so
no per-token Python loop runs on the hot path. Only on a partial match does
numpy find where two keys diverge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import torch

from radix_evict.cache.compiled import page_kernel

TOKEN_BYTES: Final = 8  # keys are stored as int64 (Final: compiled code reads a constant)

TokenKey = Sequence[int] | np.ndarray | torch.Tensor

_INT64: Final = np.dtype(np.int64)  # numpy's shared descriptor: an identity test finds it
_NDARRAY: Final = np.ndarray  # (a Final: a compiled module reads it from a C global)
# The C page loops (None: not built, or the interpreted build): common_prefix_len's loop.
_LOOPS: Final[Any] = page_kernel()


def children_to_scan(page_size: int) -> int:
    """How many children a lookup compares in place before it asks the children's dict.

    A node's children are filed under their first page's bytes. Among a few,
    comparing first pages in place (``bytes.startswith``, no copy) beats
    copying the page out of the key and hashing it: with pages of 512 tokens a
    hash costs about what ten compares do; below 64 tokens the dict always wins.
    """
    return page_size * TOKEN_BYTES // 400


class TreeNode:
    """One radix-tree node: a run of tokens and the KV slots that hold them.

    Fields a policy may read: ``last_access_time``, ``creation_time``,
    ``hit_count``, ``priority``, ``num_tokens``, ``prefix_len`` (tokens from the
    root through this node), ``history_len`` (the branch's high-water prefix
    length), ``lock_ref``, ``parent``, ``children``, and ``context``: the
    :class:`~radix_evict.cache.context.RequestContext` of the last request that
    matched or inserted through it (None where callers give none).
    """

    __slots__ = (
        "_heap_seq",
        "children",
        "context",
        "creation_time",
        "history_len",
        "hit_count",
        "host_children",
        "host_lock_ref",
        "host_value",
        "key_bytes",
        "last_access_time",
        "lock_ref",
        "num_tokens",
        "parent",
        "prefix_len",
        "priority",
        "value",
    )

    def __init__(
        self,
        parent: TreeNode | None,
        key_bytes: bytes,
        value: Any,
        time: float,
        priority: int = 0,
    ) -> None:
        self.parent = parent
        self.children: dict[bytes, TreeNode] = {}
        self.key_bytes = key_bytes
        self.value = value
        self.num_tokens = len(key_bytes) // TOKEN_BYTES
        self.prefix_len: int = (parent.prefix_len if parent is not None else 0) + self.num_tokens
        self.history_len = self.prefix_len
        self.last_access_time = time
        self.creation_time = time
        self.hit_count = 0
        self.priority = priority
        self.lock_ref = 0
        self.context: Any = None  # a RequestContext (not imported: the tree stays standalone)
        # The host tier's fields (None/0 without one): see the class docstring.
        self.host_value: Any = None
        self.host_children: dict[bytes, TreeNode] | None = None
        self.host_lock_ref = 0  # pinned on host while a load-back is in progress
        self._heap_seq = -1

    @property
    def key(self) -> np.ndarray:
        """This node's tokens (a read-only int64 view)."""
        return np.frombuffer(self.key_bytes, dtype=np.int64)

    def __repr__(self) -> str:
        return (
            f"TreeNode(tokens={self.num_tokens}, prefix_len={self.prefix_len}, "
            f"lock_ref={self.lock_ref}, hit_count={self.hit_count}, priority={self.priority}, "
            f"last_access_time={self.last_access_time})"
        )


def as_token_array(tokens: Any, what: str = "tokens") -> np.ndarray:
    """Validate ``tokens`` and return them as a 1-D int64 numpy array.

    Accepts a sequence of ints, a numpy integer array or an integer torch
    tensor. Floats, bools and other types are errors, never truncated.
    """
    if type(tokens) is _NDARRAY and tokens.dtype is _INT64 and tokens.ndim == 1:
        return tokens
    if isinstance(tokens, torch.Tensor):
        if tokens.dtype == torch.bool or tokens.dtype.is_floating_point or tokens.is_complex():
            raise TypeError(f"{what} must be integer token ids, got a tensor of {tokens.dtype}")
        arr = tokens.detach().cpu().numpy()
    elif isinstance(tokens, np.ndarray):
        arr = tokens
    elif isinstance(tokens, (str, bytes)):
        raise TypeError(
            f"{what} must be a sequence of integer token ids, got {type(tokens).__name__}"
        )
    else:
        try:
            n = len(tokens)
        except TypeError:
            raise TypeError(
                f"{what} must be a sequence of integer token ids, got {type(tokens).__name__}"
            ) from None
        if n == 0:
            return np.empty(0, dtype=np.int64)
        arr = np.asarray(tokens)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        raise TypeError(f"{what} must be integer token ids, got dtype {arr.dtype}")
    if arr.dtype != np.int64:
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"{what}: token id {int(arr.max())} does not fit in int64")
        arr = arr.astype(np.int64)
    return arr


def key_view(arr: np.ndarray, n: int) -> memoryview:
    """The first ``n`` tokens of ``arr`` as raw bytes, without copying them.

    ``bytes.startswith`` accepts a memoryview, so node keys are compared
    against the caller's array in place: a 10k-token prompt is never copied
    just to be looked up.
    """
    try:
        view = memoryview(arr).cast("B")  # type: ignore[arg-type]
    except TypeError:  # not contiguous (a strided view): the one case that copies
        view = memoryview(np.ascontiguousarray(arr[:n])).cast("B")  # type: ignore[arg-type]
    # Cut as a memoryview: a numpy slice would be one more array to export.
    return view if n == len(arr) else view[: n * TOKEN_BYTES]


def common_prefix_len(node_key: bytes, key: memoryview, offset: int) -> int:
    """Tokens ``node_key`` shares with ``key`` read from byte ``offset`` on."""
    rest = len(key) - offset
    if rest < len(node_key) and node_key.startswith(key[offset:]):
        return (
            rest // TOKEN_BYTES
        )  # the key ends inside the node: the common case of a split insert
    if _LOOPS is not None:
        return int(_LOOPS.common_prefix(node_key, key, offset))
    x = np.frombuffer(node_key, dtype=np.int64)
    y = np.frombuffer(key, dtype=np.int64, offset=offset)
    n = min(len(x), len(y))
    diff = np.flatnonzero(x[:n] != y[:n])
    return int(diff[0]) if len(diff) else n


def find_child(
    children: dict[bytes, TreeNode], kv: memoryview, off: int, pb: int, few: int
) -> tuple[TreeNode | None, bytes]:
    """The child filed under the page of ``kv`` at byte ``off``, and the key it is filed under.

    Children are filed under their first page's bytes. Among ``few`` or fewer
    a lookup compares first pages in place (no copy, no hash: see
    :func:`children_to_scan`); returns ``(None, b"")`` if none matches. Past
    that it copies the page out and asks the dict; returns the copied key
    even on a miss (hashed already, for a caller that files a new child under it).
    """
    if len(children) <= few:
        if children:
            page = kv[off : off + pb]
            for key, kid in children.items():
                if key.startswith(page):  # (keys are whole pages: equality)
                    return kid, key
        return None, b""
    first = kv[off : off + pb].tobytes()
    return children.get(first), first


class SplitRecord:
    """What a split changed in the node it split: enough to undo it."""

    def __init__(self, node: TreeNode) -> None:
        self.node = node
        self.key_bytes = node.key_bytes
        self.value: Any = node.value
        self.host_value: Any = node.host_value
        self.num_tokens = node.num_tokens
        self.last_access_time = node.last_access_time


def split_node(child: TreeNode, m: int, t: float, page_size: int, first: bytes) -> TreeNode:
    """Split ``child`` after ``m`` tokens at tick ``t``; the new parent takes the head.

    The original node object keeps the tail, so a lock handle on it stays
    valid, and is stamped ``t + 2``. The new parent inherits what describes
    the shared prefix, and is filed where ``child`` was (under ``first``, the
    key ``child`` was found under, if the caller has it: else its first page).
    A host-only node's head is host-only too.
    """
    parent = child.parent
    assert parent is not None and 0 < m < child.num_tokens
    cut = m * TOKEN_BYTES
    ck = child.key_bytes
    value = child.value
    k = m // page_size
    head_value: Any = None
    if value is not None:
        head_value, child.value = value[:k], value[k:]
    head = TreeNode(parent, ck[:cut], head_value, t, child.priority)
    if child.host_value is not None:
        hv = child.host_value
        head.host_value, child.host_value = hv[:k], hv[k:]
        head.host_lock_ref = child.host_lock_ref
    # SGLang draws a creation tick for the new node too (t + 1) before giving it the
    # child's creation_time, so the child's re-stamp comes two ticks later.
    head.creation_time = child.creation_time
    head.hit_count = child.hit_count
    head.lock_ref = child.lock_ref
    head.history_len = child.history_len
    head.context = child.context
    pb = page_size * TOKEN_BYTES
    child.key_bytes = ck[cut:]
    child.num_tokens -= m
    child.parent = head
    child.last_access_time = t + 2.0
    key = first if first else ck[:pb]  # the head's key: the same first page
    if value is None:
        head.host_children = {child.key_bytes[:pb]: child}
        siblings = parent.host_children
        assert siblings is not None
        siblings[key] = head
    else:
        head.children[child.key_bytes[:pb]] = child
        parent.children[key] = head
    return head


def unsplit_node(split: SplitRecord, page_size: int) -> None:
    """Undo :func:`split_node`: the tail takes its head back (the head is dropped)."""
    child = split.node
    head = child.parent
    assert head is not None and head.parent is not None
    pb = page_size * TOKEN_BYTES
    if child.value is None:
        siblings = head.parent.host_children
        assert siblings is not None
        siblings[split.key_bytes[:pb]] = child
    else:
        head.parent.children[split.key_bytes[:pb]] = child
    child.parent = head.parent
    child.key_bytes = split.key_bytes
    child.value = split.value
    child.host_value = split.host_value
    child.num_tokens = split.num_tokens
    child.last_access_time = split.last_access_time
    head.parent = None
