"""KV slot pool: a page allocator over a torch free list, plus optional K/V buffers.

The cache only needs the :class:`Allocator` protocol, so a serving engine can
hand it its own allocator; :class:`KVPool` is the one radix-evict ships.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class Allocator(Protocol):
    """What :class:`~radix_evict.RadixCache` needs from a slot allocator."""

    page_size: int

    @property
    def device(self) -> torch.device: ...

    def alloc(self, n: int) -> torch.Tensor | None: ...

    def free(self, indices: torch.Tensor) -> None: ...

    def available_size(self) -> int: ...


def default_device() -> torch.device:
    """cuda when a GPU is present, else cpu."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class KVPool:
    """Slots ``0 .. size-1`` handed out in whole pages, with double-free detection.

    The free list is a stack of free page ids in a torch tensor on the pool's
    device, with an ``allocated`` flag per page beside it. On cpu the same
    memory is also driven through numpy views: numpy's per-call overhead is a
    fraction of torch's, and these calls sit on every request's path.
    """

    def __init__(
        self,
        size: int,
        page_size: int = 1,
        device: str | torch.device | None = None,
        layers: int = 0,
        heads: int = 1,
        head_dim: int = 1,
        dtype: torch.dtype = torch.float16,
    ) -> None:
        for name, v, low in (("size", size, 1), ("page_size", page_size, 1), ("layers", layers, 0),
                             ("heads", heads, 1), ("head_dim", head_dim, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"KVPool: {name} must be an integer >= {low}, got {v!r}")
        if size % page_size:
            raise ValueError(
                f"KVPool: size {size} is not a whole number of pages of {page_size} tokens"
            )
        self.size = size
        self.page_size = page_size
        self._device = torch.device(device) if device is not None else default_device()
        self.num_pages = size // page_size
        dev = self._device
        # Free pages live in _stack[_head:]; alloc takes from the front, free pushes back.
        self._stack = torch.arange(self.num_pages, dtype=torch.int64, device=dev)
        self._head = 0
        self._allocated = torch.zeros(self.num_pages, dtype=torch.bool, device=dev)
        self._page_offsets = torch.arange(page_size, dtype=torch.int64, device=dev)
        self._on_cpu = dev.type == "cpu"
        if self._on_cpu:
            self._stack_np = self._stack.numpy()
            self._allocated_np = self._allocated.numpy()
            self._stamp_np = np.zeros(self.num_pages, dtype=np.int64)
            self._offsets_np = self._page_offsets.numpy()
        self.layers = layers
        self.k_buffer: list[torch.Tensor] = []
        self.v_buffer: list[torch.Tensor] = []
        if layers:
            shape = (size, heads, head_dim)
            self.k_buffer = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(layers)]
            self.v_buffer = [torch.zeros(shape, dtype=dtype, device=dev) for _ in range(layers)]

    @property
    def device(self) -> torch.device:
        return self._device

    def available_size(self) -> int:
        """Free slots (always whole pages)."""
        return (self.num_pages - self._head) * self.page_size

    def alloc(self, n: int) -> torch.Tensor | None:
        """``n`` slot indices on the pool's device, or None if fewer are free."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"KVPool.alloc: n must be an integer >= 0, got {n!r}")
        P = self.page_size
        if n % P:
            raise ValueError(f"KVPool.alloc: n={n} is not a multiple of page_size {P}")
        k = int(n) // P
        if k > self.num_pages - self._head:
            return None
        h = self._head
        self._head = h + k
        if self._on_cpu:
            pages = self._stack_np[h : h + k]
            self._allocated_np[pages] = True
            if P == 1:
                return torch.from_numpy(pages.copy())
            return torch.from_numpy((pages[:, None] * P + self._offsets_np).reshape(-1))
        tpages = self._stack[h : h + k]
        self._allocated[tpages] = True
        if P == 1:
            return tpages.clone()
        return (tpages[:, None] * P + self._page_offsets).reshape(-1)

    def free(self, indices: torch.Tensor) -> None:
        """Return slots to the pool; whole pages only. Raises, freeing nothing, on a bad slot."""
        pages = self._pages_of(indices)
        k = len(pages)
        if k == 0:
            return
        h = self._head
        if self._on_cpu:
            assert isinstance(pages, np.ndarray)
            if not self._allocated_np[pages].all():
                self._raise_not_allocated(pages)
            if k > 1:
                order = np.arange(k)
                self._stamp_np[pages] = order
                if not (self._stamp_np[pages] == order).all():
                    raise ValueError("KVPool.free: the same slot appears twice in one call")
            self._allocated_np[pages] = False
            self._stack_np[h - k : h] = pages
        else:
            assert isinstance(pages, torch.Tensor)
            if not bool(self._allocated[pages].all()):
                self._raise_not_allocated(pages.cpu().numpy())
            if k > 1 and torch.unique(pages).numel() != k:
                raise ValueError("KVPool.free: the same slot appears twice in one call")
            self._allocated[pages] = False
            self._stack[h - k : h] = pages
        self._head = h - k

    accepts_numpy = True  # release() also takes numpy arrays (cpu pools)

    def release(self, indices: torch.Tensor | np.ndarray) -> None:
        """Free slots whose owner guarantees they are allocated, distinct, whole pages.

        The cache returns the slots its own nodes hold through this unchecked
        path (the tree's invariants already rule out a double free, and the
        test suite checks them after every operation); ``free`` is the
        checked path for everyone else.
        """
        k = indices.shape[0] // self.page_size
        if k == 0:
            return
        h = self._head
        if self._on_cpu:
            idx = indices if isinstance(indices, np.ndarray) else indices.numpy()
            pages = idx if self.page_size == 1 else idx[:: self.page_size] // self.page_size
            self._allocated_np[pages] = False
            self._stack_np[h - k : h] = pages
        else:
            assert isinstance(indices, torch.Tensor)
            tp = indices if self.page_size == 1 else indices[:: self.page_size] // self.page_size
            self._allocated[tp] = False
            self._stack[h - k : h] = tp
        self._head = h - k

    def is_allocated(self, slot: int) -> bool:
        """Whether ``slot`` is currently handed out (for checks and tests)."""
        return bool(self._allocated[slot // self.page_size])

    def _pages_of(self, indices: torch.Tensor) -> np.ndarray | torch.Tensor:
        if not isinstance(indices, torch.Tensor):
            raise TypeError(f"KVPool.free: expected a torch tensor of slots, got {type(indices).__name__}")
        if indices.dtype in (torch.bool,) or indices.dtype.is_floating_point or indices.is_complex():
            raise TypeError(f"KVPool.free: slots must be integers, got dtype {indices.dtype}")
        if indices.device != self._device:
            raise ValueError(
                f"KVPool.free: slots are on {indices.device} but the pool is on {self._device}"
            )
        if indices.dim() != 1:
            raise ValueError(f"KVPool.free: slots must be 1-D, got shape {tuple(indices.shape)}")
        n = indices.shape[0]
        if n == 0:
            return np.empty(0, dtype=np.int64) if self._on_cpu else indices.long()
        P = self.page_size
        if n % P:
            raise ValueError(f"KVPool.free: {n} slots are not whole pages of {P}")
        idx = indices.numpy() if self._on_cpu else indices
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= self.size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"KVPool.free: slot {bad} is outside the pool (0..{self.size - 1})")
        if P == 1:
            return idx.astype(np.int64, copy=False) if self._on_cpu else idx.long()
        if self._on_cpu:
            rows = idx.astype(np.int64, copy=False).reshape(-1, P)
            pages_np = rows[:, 0] // P
            if not (rows == pages_np[:, None] * P + self._offsets_np).all():
                raise ValueError(f"KVPool.free: slots are not whole, aligned pages of {P}")
            return pages_np
        trows = idx.long().reshape(-1, P)
        tpages = trows[:, 0] // P
        if not bool((trows == tpages[:, None] * P + self._page_offsets).all()):
            raise ValueError(f"KVPool.free: slots are not whole, aligned pages of {P}")
        return tpages

    def _raise_not_allocated(self, pages: np.ndarray) -> None:
        flags = self._allocated_np[pages] if self._on_cpu else self._allocated.cpu().numpy()[pages]
        bad = int(pages[np.flatnonzero(~flags)[0]]) * self.page_size
        raise ValueError(f"KVPool.free: slot {bad} is not allocated (freed twice, or never handed out)")

    def __repr__(self) -> str:
        return (
            f"KVPool(size={self.size}, page_size={self.page_size}, device={str(self._device)!r}, "
            f"free={self.available_size()}, layers={self.layers})"
        )
