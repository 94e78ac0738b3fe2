"""KV slot pool: a page allocator over a torch free list, plus optional K/V buffers.

The cache only needs the :class:`Allocator` protocol, so a serving engine can
hand it its own allocator; :class:`KVPool` is the one radix-evict ships.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

import numpy as np
import torch
from mypy_extensions import mypyc_attr

from radix_evict.cache.allocator import Allocator
from radix_evict.cache.args import SlotDevice, check_int

__all__ = ["Allocator", "KVPool", "default_device"]


def default_device() -> torch.device:
    """cuda when a GPU is present, else cpu."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@mypyc_attr(allow_interpreted_subclasses=True)  # engines and tests subclass it
class KVPool:
    """Slots ``0 .. size-1`` handed out in whole pages, with double-free detection.

    Free pages live in ``stack[head:]``; ``alloc`` takes from the front by
    moving ``head``, ``free`` pushes pages back in front of it. ``where[p]`` is
    the position page ``p`` was last pushed to, so ``p`` is free exactly when
    ``where[p] >= head and stack[where[p]] == p``: allocation writes nothing
    per page, and a free can still tell an allocated slot from a free one.
    The state is torch tensors on the pool's device; on cpu the same memory is
    driven through numpy views, whose per-call cost is a fraction of torch's
    (these calls sit on every request's path).
    """

    def __init__(
        self,
        size: SupportsIndex,
        page_size: SupportsIndex = 1,
        device: str | torch.device | None = None,
        layers: SupportsIndex = 0,
        heads: SupportsIndex = 1,
        head_dim: SupportsIndex = 1,
        dtype: torch.dtype = torch.float16,
    ) -> None:
        # Counts are annotated SupportsIndex, not int, so that a compiled build does not
        # coerce a bool on the way in: the checks here see exactly what the caller passed.
        self.size: int = check_int("KVPool: size", size, 1)
        self.page_size: int = check_int("KVPool: page_size", page_size, 1)
        self.layers: int = check_int("KVPool: layers", layers, 0)
        shape = (
            self.size,
            check_int("KVPool: heads", heads, 1),
            check_int("KVPool: head_dim", head_dim, 1),
        )
        n, P = self.size, self.page_size
        if n % P:
            raise ValueError(f"KVPool: size {n} is not a whole number of pages of {P} tokens")
        self.slot_device = SlotDevice(device if device is not None else default_device())
        dev = self.slot_device.device
        on_cpu = self.slot_device.on_cpu
        self.num_pages = n // P
        stack = torch.arange(self.num_pages, dtype=torch.int64, device=dev)
        where = torch.arange(self.num_pages, dtype=torch.int64, device=dev)
        # Row p holds page p's slots: gathering rows spells pages out as slots at copy
        # speed (a broadcast add is ~3x slower). 8 bytes per slot, next to KV of
        # kilobytes per slot in a real pool.
        table = torch.arange(n, dtype=torch.int64, device=dev).view(self.num_pages, P)
        # The arrays the methods work on: numpy views on cpu, the tensors elsewhere.
        self._stack: Any = stack.numpy() if on_cpu else stack
        self._where: Any = where.numpy() if on_cpu else where
        self._table: Any = table.numpy() if on_cpu else table
        self._tensors = (stack, where, table)  # keeps the storage behind numpy views alive
        self._head = 0
        self.k_buffer: list[torch.Tensor] = []
        self.v_buffer: list[torch.Tensor] = []
        if self.layers:
            layer_range = range(self.layers)
            self.k_buffer = [torch.zeros(shape, dtype=dtype, device=dev) for _ in layer_range]
            self.v_buffer = [torch.zeros(shape, dtype=dtype, device=dev) for _ in layer_range]

    @property
    def device(self) -> torch.device:
        return self.slot_device.device

    def available_size(self) -> int:
        """Free slots (always whole pages)."""
        return (self.num_pages - self._head) * self.page_size

    def alloc(self, n: SupportsIndex) -> torch.Tensor | None:
        """``n`` slot indices on the pool's device, or None if fewer are free."""
        count = check_int("KVPool.alloc: n", n, 0)
        P = self.page_size
        if count % P:
            raise ValueError(f"KVPool.alloc: n={count} is not a multiple of page_size {P}")
        k = count // P
        h = self._head
        if k > self.num_pages - h:
            return None
        self._head = h + k
        slots = self.page_slots(self._stack[h : h + k])
        return torch.from_numpy(slots) if self.slot_device.on_cpu else slots

    def page_slots(self, pages: Any) -> Any:
        """A new 1-D array of the slots of ``pages`` (numpy on cpu, a tensor elsewhere)."""
        if self.page_size == 1:
            return pages.copy() if self.slot_device.on_cpu else pages.clone()
        return self._table[pages].reshape(-1)

    def free(self, indices: torch.Tensor) -> None:
        """Return slots to the pool; whole pages only. Raises, freeing nothing, on a bad slot."""
        pages = self._pages_of(indices)
        k = len(pages)
        if k == 0:
            return
        stack, where, h = self._stack, self._where, self._head
        if k == 1 and self.slot_device.on_cpu:  # the partial last page every request frees: scalars
            page = int(pages[0])
            w1 = int(where[page])
            if w1 >= h and int(stack[w1]) == page:
                raise ValueError(
                    f"KVPool.free: slot {page * self.page_size} is not allocated "
                    "(freed twice, or never handed out)"
                )
            h -= 1
            stack[h] = page
            where[page] = h
            self._head = h
            return
        w = where[pages]
        free_now = (w >= h) & (stack[w] == pages)
        if bool(free_now.any()):
            bad = int(pages[free_now][0]) * self.page_size
            raise ValueError(
                f"KVPool.free: slot {bad} is not allocated (freed twice, or never handed out)"
            )
        saved = stack[h - k : h].copy() if self.slot_device.on_cpu else stack[h - k : h].clone()
        self._push(pages)
        if k > 1 and not bool((where[pages] == self._positions(h - k, h)).all()):
            stack[h - k : h] = saved  # a page listed twice: undo, free nothing
            where[pages] = w
            self._head = h
            raise ValueError("KVPool.free: the same slot appears twice in one call")

    def release_pages(self, pages: torch.Tensor | np.ndarray) -> None:
        """Free pages (slot // page_size) whose owner guarantees they are allocated and distinct.

        The cache returns the pages its own nodes hold through this unchecked
        path (the tree's invariants already rule out a double free, and the
        test suite checks them after every operation); ``free`` is the
        checked path for everyone else.
        """
        if self.slot_device.on_cpu and not isinstance(pages, np.ndarray):
            pages = pages.numpy()
        if len(pages):
            self._push(pages)

    def free_mask(self) -> np.ndarray:
        """One flag per slot, True where the slot is free (for checks and tests; O(size))."""
        free = self._stack[self._head :]
        mask = np.zeros(self.num_pages, dtype=bool)
        mask[free if self.slot_device.on_cpu else free.cpu().numpy()] = True
        return np.repeat(mask, self.page_size)

    def is_allocated(self, slot: int) -> bool:
        """Whether ``slot`` is currently handed out (for checks and tests)."""
        p = slot // self.page_size
        w = int(self._where[p])
        return not (w >= self._head and int(self._stack[w]) == p)

    def _push(self, pages: Any) -> None:
        k = len(pages)
        h = self._head - k
        self._stack[h : h + k] = pages
        self._where[pages] = self._positions(h, h + k)
        self._head = h

    def _positions(self, lo: int, hi: int) -> Any:
        if self.slot_device.on_cpu:
            return np.arange(lo, hi, dtype=np.int64)
        return torch.arange(lo, hi, dtype=torch.int64, device=self.slot_device.device)

    def _pages_of(self, indices: torch.Tensor) -> Any:
        """Validate slots and return their page ids (numpy on cpu, a tensor elsewhere)."""
        on_cpu = self.slot_device.on_cpu
        self.slot_device.check("KVPool.free: slots", indices)
        idx: Any = indices.numpy().astype(np.int64, copy=False) if on_cpu else indices.long()
        n = len(idx)
        if n == 0:
            return idx
        P = self.page_size
        if n == P and on_cpu:  # one page (or slot): scalar checks
            s0 = int(idx[0])
            if not 0 <= s0 < self.size:
                raise ValueError(f"KVPool.free: slot {s0} is outside the pool (0..{self.size - 1})")
            if P > 1 and (s0 % P or not bool((idx == self._table[s0 // P]).all())):
                raise ValueError(f"KVPool.free: slots are not whole, aligned pages of {P}")
            return idx[:1] // P if P > 1 else idx
        if n % P:
            raise ValueError(f"KVPool.free: {n} slots are not whole pages of {P}")
        # Each page's first slot must be in the pool; the row comparison below then
        # bounds every other slot, so only 1/P of the slots is range-checked.
        first = idx if P == 1 else idx[::P]
        lo, hi = int(first.min()), int(first.max())
        if lo < 0 or hi >= self.size:
            bad = lo if lo < 0 else hi
            raise ValueError(f"KVPool.free: slot {bad} is outside the pool (0..{self.size - 1})")
        if P == 1:
            return idx
        pages = first // P
        if not bool((idx.reshape(-1, P) == self._table[pages]).all()):
            raise ValueError(f"KVPool.free: slots are not whole, aligned pages of {P}")
        return pages

    def __repr__(self) -> str:
        return (
            f"KVPool(size={self.size}, page_size={self.page_size}, "
            f"device={str(self.slot_device.device)!r}, "
            f"free={self.available_size()}, layers={self.layers})"
        )
