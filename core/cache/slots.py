"""How tree nodes hold their KV slots.

A node stores one entry per page: the slot itself when ``page_size`` is 1,
the page id (slot // page_size) otherwise, since a page's slots are
consecutive. With 512-token pages that makes copying, splitting, joining and
freeing node values 512 times cheaper; slots are spelled out only where the
API hands them to a caller (``match_prefix``).

On a cpu pool the entries are numpy arrays: their per-call cost is a fraction
of torch's, and these calls sit on every request's path. On any other device
they are tensors on that device, so ``match_prefix`` never copies indices
between host and device. Only this module knows which.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from radix_evict.cache.args import SlotDevice
from radix_evict.cache.pool import Allocator, KVPool

SlotArray = np.ndarray | torch.Tensor


def unchecked_release(pool: Allocator) -> Any:
    """``pool.release_pages`` when calling it is indistinguishable from ``pool.free``.

    That holds for a :class:`KVPool` whose ``free`` nobody overrode: the
    release path does what ``free`` does minus the checks, which the tree's
    own invariants make redundant. Any other allocator, including a KVPool
    subclass that wraps ``free`` (to poison or count slots), sees every slot
    the cache lets go through its ``free``, as the API promises.
    """
    kind = type(pool)
    if isinstance(pool, KVPool) and all(
        getattr(kind, m) is getattr(KVPool, m) for m in ("free", "release_pages")
    ):
        return pool.release_pages
    return None


class SlotStorage:
    """Per-page slot entries for nodes, over numpy (cpu) or torch (other devices)."""

    def __init__(self, pool: Allocator) -> None:
        self.page_size = P = int(pool.page_size)
        # A KVPool's own device record, so the on-cpu flag is derived once per pool.
        self.slot_device = pool.slot_device if isinstance(pool, KVPool) else SlotDevice(pool.device)
        on_cpu = self.slot_device.on_cpu
        self._pool = pool
        self._release_pages = unchecked_release(pool)
        offsets = torch.arange(P, dtype=torch.int64, device=self.slot_device.device)
        self._offsets: Any = offsets.numpy() if on_cpu else offsets
        # A KVPool spells pages out from its slot table; other allocators get a broadcast.
        self._page_slots: Any = pool.page_slots if isinstance(pool, KVPool) else None
        self.empty: Any = (
            np.empty(0, dtype=np.int64)
            if on_cpu
            else torch.empty(0, dtype=torch.int64, device=self.slot_device.device)
        )

    def check_pages(self, indices: torch.Tensor, start: int, stop: int) -> None:
        """Raise unless every page of ``indices[start:stop]`` is whole and aligned.

        Nodes keep one entry per page, so the slots a node takes must be whole
        pages, as ``match_prefix`` and ``KVPool.alloc`` hand them out. Checking
        each page's first and last slot reads 2/page_size of the row, which
        keeps the check off the profile; it catches shifted, unaligned or
        spliced rows. ``start`` is rounded down to its page.
        """
        P = self.page_size
        start = start // P * P
        if P == 1 or start >= stop:
            return
        idx: Any = indices.numpy() if self.slot_device.on_cpu else indices
        first = idx[start:stop:P]
        last = idx[start + P - 1 : stop : P]
        if bool((first % P != 0).any()) or bool((last - first != P - 1).any()):
            raise ValueError(
                f"indices are not whole, aligned pages of {P} slots (as KVPool.alloc hands out)"
            )

    def take(self, indices: torch.Tensor, start: int, stop: int) -> Any:
        """A node's own entries for ``indices[start:stop]`` (page-aligned bounds)."""
        P = self.page_size
        idx: Any = indices.numpy() if self.slot_device.on_cpu else indices
        if P == 1:
            return idx[start:stop].copy() if self.slot_device.on_cpu else idx[start:stop].clone()
        return idx[start:stop:P] // P

    def split(self, value: Any, tokens: int) -> tuple[Any, Any]:
        """The entries of a node's first ``tokens`` tokens and of the rest."""
        k = tokens // self.page_size
        return value[:k], value[k:]

    def slots(self, values: list[Any]) -> Any:
        """The slots behind ``values``, joined, as numpy (cpu) or a tensor."""
        P = self.page_size
        if len(values) > 1:
            joined = np.concatenate(values) if self.slot_device.on_cpu else torch.cat(values)
        elif P == 1:  # a node's own array: hand out a copy
            return values[0].copy() if self.slot_device.on_cpu else values[0].clone()
        else:
            joined = values[0]
        if P == 1:
            return joined
        if self._page_slots is not None:
            return self._page_slots(joined)
        return (joined[:, None] * P + self._offsets).reshape(-1)

    def to_tensor(self, values: list[Any]) -> torch.Tensor:
        """A new int64 tensor of the slots behind ``values``, on the pool's device."""
        out = self.slots(values)
        return torch.from_numpy(out) if self.slot_device.on_cpu else out

    def release(self, values: list[Any]) -> None:
        """Give the slots behind ``values`` back to the pool."""
        if self._release_pages is not None:
            if self.slot_device.on_cpu:
                pages = values[0] if len(values) == 1 else np.concatenate(values)
            else:
                pages = values[0] if len(values) == 1 else torch.cat(values)
            self._release_pages(pages)
            return
        self._pool.free(self.to_tensor(values))
