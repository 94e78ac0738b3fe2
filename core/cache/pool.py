"""KV slot pool: a page allocator over a torch free list, plus optional K/V buffers.

The cache only needs the :class:`Allocator` protocol, so a serving engine can
hand it its own allocator; :class:`KVPool` is the one radix-evict ships.
"""

from __future__ import annotations

from typing import Any, Final, SupportsIndex

import numpy as np
import torch
from mypy_extensions import mypyc_attr

from radix_evict.cache.allocator import Allocator
from radix_evict.cache.args import SlotDevice, check_int
from radix_evict.cache.device import resolve_device
from radix_evict.cache.ownership import FREE, PageOwners, describe_outside

__all__ = ["Allocator", "KVPool", "default_device"]

# Read once: a compiled module reads a Final from a C global, not through ``np``'s dict.
_INT64: Final = np.dtype(np.int64)  # numpy's shared descriptor: an identity test finds it
_EMPTY: Final = np.empty
_FROM_NUMPY: Final = torch.from_numpy


def default_device() -> torch.device:
    """The current GPU when one is present (``cuda:N``, as its tensors report it), else cpu."""
    return resolve_device(None)


@mypyc_attr(allow_interpreted_subclasses=True)  # engines and tests subclass it
class KVPool:
    """Slots ``0 .. size-1`` handed out in whole pages; every page's owner is known.

    The free list and one owner tag per page live in
    :class:`~radix_evict.cache.ownership.PageOwners`: it says whether a page
    is free, a caller's, or a cache node's, so ``free`` refuses a double free
    and the tree's slots, and a cache refuses to take slots that are not the
    caller's. That state is numpy on the host whatever the device (these calls
    sit on every request's path, and numpy's per-call cost is a fraction of
    torch's); the slots handed out and the K/V buffers are on the device
    (see :class:`~radix_evict.cache.args.SlotDevice`).
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
        self.slot_device = SlotDevice(device)  # None: the current GPU, else cpu
        self._on_cpu = self.slot_device.on_cpu  # (read on every alloc: no copy on cpu)
        dev = self.slot_device.device
        self.num_pages = n // P
        # Row p holds page p's slots: gathering rows spells pages out as slots at copy
        # speed (a broadcast add is ~3x slower). 8 bytes per slot, next to KV of
        # kilobytes per slot in a real pool.
        self._table: Any = np.arange(n, dtype=np.int64).reshape(self.num_pages, P)
        self.owners = PageOwners(self.num_pages, P)  # the free list and the owner tags
        # The C loops between slots and pages (None: not built, numpy does it).
        self._loops: Any = self.owners.loops
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
        return (self.num_pages - self.owners.head) * self.page_size

    def alloc(self, n: SupportsIndex) -> torch.Tensor | None:
        """``n`` slot indices on the pool's device, or None if fewer are free."""
        count = check_int("KVPool.alloc: n", n, 0)
        P = self.page_size
        if count % P:
            raise ValueError(f"KVPool.alloc: n={count} is not a multiple of page_size {P}")
        k = count // P
        owners = self.owners
        if k > self.num_pages - owners.head:
            return None
        slots = self.page_slots(owners.pop(k))
        return _FROM_NUMPY(slots) if self._on_cpu else self.slot_device.to_device(slots)

    def take_pages(self, k: int) -> Any:
        """``k`` free pages handed straight to a cache node (its own array), or None if fewer.

        For KV the cache itself copies in (a host tier's writes), which no caller holds.
        """
        owners = self.owners
        if k > self.num_pages - owners.head:
            return None
        pages = owners.pop(k).copy()
        owners.adopt(pages)
        return pages

    def page_slots(self, pages: Any) -> Any:
        """A new int64 host array of the slots of ``pages`` (pinned for a GPU: see ``empty``)."""
        loops = self._loops
        n = len(pages) * self.page_size
        out = _EMPTY(n, _INT64) if self._on_cpu else self.slot_device.empty(n)
        if loops is not None:
            loops.page_slots([pages], self.page_size, out)
        elif self.page_size == 1:
            out[:] = pages
        else:
            out[:] = self._table[pages].reshape(-1)
        return out

    def parts_slots(self, parts: list[Any]) -> Any:
        """A new 1-D array of the slots of the pages of every array in ``parts``, in order."""
        loops = self._loops
        if loops is not None:
            total = 0
            for part in parts:
                total += len(part)
            n = total * self.page_size
            out = _EMPTY(n, _INT64) if self._on_cpu else self.slot_device.empty(n)
            loops.page_slots(parts, self.page_size, out)
            return out
        return self.page_slots(parts[0] if len(parts) == 1 else np.concatenate(parts))

    def free(self, indices: torch.Tensor) -> None:
        """Return a caller's slots to the pool; whole pages only.

        Raises, freeing nothing, on a slot that is outside the pool, listed
        twice, already free, or owned by a cache node (the cache frees those).
        """
        idx = self.slot_device.host_array("KVPool.free: indices", indices)
        if self._loops is not None and self.owners.free_slots(idx):  # checked and freed in C
            return
        self.owners.push(self.caller_pages(idx, "KVPool.free: indices"))

    # The cache's side: pages move caller -> cache node -> pool, each move checked.
    def caller_pages(self, idx: Any, what: str, start: int = -1, stop: int = -1) -> Any:
        """The pages of the slots ``idx`` (an int64 array from ``SlotDevice.host_array``), checked.

        Raises ValueError naming ``what`` (``what[start:stop]`` when ``start``
        is given: the name is built only for an error) and the culprits unless
        ``idx`` is whole, aligned pages in order (every slot of each page is
        compared), in the pool, each page a caller's and listed once. At page
        size 1 the result is ``idx`` itself, otherwise a new array.
        """
        P = self.page_size
        owners = self.owners
        if self._loops is not None:  # C loops: the usual case, nothing to name
            if P == 1:
                if owners.callers_ok(idx):
                    return idx
            else:
                pages = owners.caller_slots(idx)
                if pages is not None:
                    return pages
        name = what if start < 0 else f"{what}[{start}:{stop}]"
        # At page size 1 the owner check also rules out slots outside the pool.
        pages = idx if P == 1 else self._whole_pages(idx, name)
        owners.check_caller(pages, name)
        return pages

    def adopt_pages(self, pages: Any) -> None:
        """A cache node takes the caller's ``pages`` (checked by ``caller_pages``)."""
        self.owners.adopt(pages)

    def free_caller_pages(self, pages: Any) -> None:
        """Free a caller's ``pages`` already checked by ``caller_pages``."""
        self.owners.push(pages)

    def release_pages(self, parts: list[Any]) -> None:
        """A cache gives back the pages its nodes own (one array a node), all or none.

        The arrays are the nodes' own entries (see ``slots``).
        Refuses, freeing nothing, a page that is not a node's or is listed
        twice: a page has one owning node (adoption checks that), so that
        would be a node released twice.
        """
        self.owners.release(parts, "KVPool.release_pages: the cache's slots")

    def disown_pages(self, pages: Any) -> None:
        """Hand a cache node's pages back to the caller side, for a ``free`` override to free."""
        if len(pages):
            self.owners.check_cached(pages, "KVPool.disown_pages: the cache's slots")
            self.owners.disown(pages)

    def _whole_pages(self, idx: Any, what: str) -> Any:
        """The page of each page of slots in ``idx``, which must be whole pages in the pool."""
        n = len(idx)
        if n == 0:
            return idx
        P = self.page_size
        size = self.size
        if int(idx.view(np.uint64).max()) >= size:  # a negative slot wraps to a huge one
            raise ValueError(f"{what}: {describe_outside(idx, size)}")
        if n % P:
            raise ValueError(f"{what}: {n} slots are not whole pages of {P}")
        rows = idx.reshape(-1, P)
        pages = rows[:, 0] // P
        if not bool((rows == self._table[pages]).all()):
            raise ValueError(
                f"{what}: slots are not whole, aligned pages of {P} "
                "(each page is its slots in order, as alloc hands them out)"
            )
        return pages

    def free_mask(self) -> np.ndarray:
        """One flag per slot, True where the slot is free (for checks and tests; O(size))."""
        return np.repeat(self.owners.states() == FREE, self.page_size)

    def slot_owners(self) -> np.ndarray:
        """The owner of every slot: ``ownership.FREE``, ``CALLER`` or ``CACHED`` (O(size))."""
        return np.repeat(self.owners.states(), self.page_size)

    def is_allocated(self, slot: int) -> bool:
        """Whether ``slot`` is handed out, to a caller or a cache node (for checks and tests)."""
        return int(self.owners.states()[slot // self.page_size]) != FREE

    def __repr__(self) -> str:
        return (
            f"KVPool(size={self.size}, page_size={self.page_size}, "
            f"device={str(self.slot_device.device)!r}, "
            f"free={self.available_size()}, layers={self.layers})"
        )
