"""How tree nodes hold their KV slots.

A node stores one entry per page: the slot itself when ``page_size`` is 1,
the page id (slot // page_size) otherwise, since a page's slots are
consecutive. With 512-token pages that makes copying, splitting, joining and
freeing node values 512 times cheaper; slots are spelled out only where the
API hands them to a caller (``match_prefix``).

The entries are numpy arrays on the host whatever device the KV is on: their
per-call cost is a fraction of torch's (on a GPU, of a kernel launch's), and
these calls sit on every request's path. Slots cross to the device only when
a caller is handed them (``match_prefix``, ``node_slots``): one copy a call,
through :class:`~radix_evict.cache.args.SlotDevice`.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import torch

from radix_evict.cache.args import SlotDevice
from radix_evict.cache.ownership import host_loops
from radix_evict.cache.pool import Allocator, KVPool

# Read once: a compiled module reads a Final from a C global, not through ``np``'s dict.
_EMPTY: Final = np.empty
_INT64: Final = np.dtype(np.int64)
_FROM_NUMPY: Final = torch.from_numpy

SlotArray = np.ndarray | torch.Tensor


def frees_like_kvpool(pool: Allocator) -> bool:
    """Whether ``pool`` is a :class:`KVPool` whose ``free`` nobody overrode.

    Then the cache moves pages with the pool's page-level calls, which do what
    ``free`` does without re-checking what the cache already checked. Any
    other allocator, including a KVPool subclass that wraps ``free`` (to
    poison or count slots), sees every slot the cache lets go through its
    ``free``, as the API promises.
    """
    return isinstance(pool, KVPool) and type(pool).free is KVPool.free


class SlotStorage:
    """Per-page slot entries for nodes, numpy arrays on the host.

    Ownership: with a :class:`KVPool` every slot the cache takes is checked to
    be the caller's (handed out by ``alloc``, not freed, not a node's, listed
    once) and becomes the tree's; the tree's slots go back only through
    ``release``. Another allocator keeps no owner table, so the cache checks
    what needs none: whole aligned pages, no negative slot (nor one past a
    ``size`` attribute, if the allocator has one), no slot twice in one call.
    Whether such slots are the caller's is left to that allocator.
    """

    def __init__(self, pool: Allocator) -> None:
        self.page_size = P = int(pool.page_size)
        # A KVPool's own device record: the device is resolved once per pool.
        self.slot_device = pool.slot_device if isinstance(pool, KVPool) else SlotDevice(pool.device)
        # On cpu the slots handed out are the host arrays themselves: no copy, no call.
        self._on_cpu = self.slot_device.on_cpu
        self._pool = pool
        self._kvpool: KVPool | None = pool if isinstance(pool, KVPool) else None
        self._plain_free = frees_like_kvpool(pool)
        size = getattr(pool, "size", None)
        self._size: int | None = size if type(size) is int else None
        self._offsets: Any = np.arange(P, dtype=np.int64)
        # The C page loops spell out any number of nodes' pages in one pass.
        self._loops: Any = host_loops()
        self.empty: Any = np.empty(0, dtype=np.int64)

    def claim(self, idx: Any, start: int, stop: int) -> Any:
        """The entries of ``idx[start:stop]``, checked fit for the tree to take or free.

        ``idx`` is the caller's slots as ``SlotDevice.host_array`` hands them over.
        Raises ValueError naming the slots unless they are whole aligned pages
        in the pool that the caller holds, each once (see the class docstring
        for a foreign allocator). Nothing changes owner here: ``adopt`` and
        ``free_claimed`` do that once the whole call is known to succeed.
        ``start`` and ``stop`` are page-aligned.
        """
        if start >= stop:
            return self.empty
        part = idx[start:stop]
        pool = self._kvpool
        if pool is not None:
            return pool.caller_pages(part, "insert: indices", start, stop)
        return self._untracked_pages(part, f"insert: indices[{start}:{stop}]")

    def adopt(self, entries: Any) -> None:
        """The tree now owns the claimed ``entries``."""
        if self._kvpool is not None:
            self._kvpool.adopt_pages(entries)

    def free_claimed(self, entries: Any) -> None:
        """Give claimed caller ``entries`` (duplicates of cached KV) back to the pool."""
        if self._plain_free:
            self._kvpool.free_caller_pages(entries)  # type: ignore[union-attr]
        elif len(entries):
            self._pool.free(self.to_tensor([entries]))

    def node_entries(self, entries: Any, lo: int, hi: int) -> Any:
        """A node's own copy of ``entries[lo:hi]`` (page-aligned token offsets)."""
        P = self.page_size
        return entries[lo // P : hi // P].copy()

    def _untracked_pages(self, part: Any, what: str) -> Any:
        """The checks a foreign allocator (no owner table) gets; see the class docstring."""
        n = len(part)
        if n == 0:
            return part
        P = self.page_size
        lo, hi = int(part.min()), int(part.max())
        if lo < 0 or (self._size is not None and hi >= self._size):
            bad = lo if lo < 0 else hi
            bound = "negative" if lo < 0 else f"past the allocator's size {self._size}"
            raise ValueError(f"{what}: slot {bad} is {bound}")
        if P > 1:
            rows = part.reshape(-1, P)
            first = rows[:, 0]
            if bool((first % P != 0).any()) or not bool(
                (rows == first[:, None] + self._offsets).all()
            ):
                raise ValueError(
                    f"{what}: slots are not whole, aligned pages of {P} "
                    "(each page is its slots in order, as alloc hands them out)"
                )
            pages = first // P
        else:
            pages = part
        ordered = np.sort(pages)
        repeats = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(repeats):
            slot = int(repeats[0]) * P
            raise ValueError(f"{what}: slot {slot} is listed more than once (a slot has one owner)")
        return pages

    def split(self, value: Any, tokens: int) -> tuple[Any, Any]:
        """The entries of a node's first ``tokens`` tokens and of the rest."""
        k = tokens // self.page_size
        return value[:k], value[k:]

    def slots(self, values: list[Any]) -> Any:
        """The slots behind ``values``, joined: a new int64 host array (pinned for a GPU)."""
        P = self.page_size
        loops = self._loops
        total = 0
        for v in values:
            total += len(v)
        out = _EMPTY(total * P, _INT64) if self._on_cpu else self.slot_device.empty(total * P)
        if loops is not None or not values:
            if values:
                loops.page_slots(values, P, out)
            return out
        joined = values[0] if len(values) == 1 else np.concatenate(values)
        if P == 1:
            out[:] = joined
        else:
            out.reshape(-1, P)[:] = joined[:, None] * P + self._offsets
        return out

    def to_tensor(self, values: list[Any]) -> torch.Tensor:
        """A new int64 tensor of the slots behind ``values``, on the pool's device."""
        out = self.slots(values)
        return _FROM_NUMPY(out) if self._on_cpu else self.slot_device.to_device(out)

    def release(self, values: list[Any]) -> None:
        """Give the slots behind the tree's ``values`` back to the pool."""
        pool = self._kvpool
        if pool is not None:
            if self._plain_free:
                pool.release_pages(values)
                return
            pages = values[0] if len(values) == 1 else np.concatenate(values)
            pool.disown_pages(pages)  # back on the caller side, for the override's free
        self._pool.free(self.to_tensor(values))
