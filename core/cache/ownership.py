"""Who holds each page of a :class:`~radix_evict.KVPool`: the pool, a caller, or a cache.

A slot handed out twice is KV two requests overwrite, so every transfer of
pages is checked against one tag per page:

- free (``FREE_TAG``): in the pool's free list; ``alloc`` hands it out.
- a caller's (a tag >= 0): handed out by ``alloc``; the caller may ``free`` it
  or give it to a cache's ``insert``. The tag is the free-list position the
  page was handed out from.
- a cache node's (``CACHED_TAG``): only that cache gives it back (``evict``,
  ``reset``), never a caller's ``free``.

Each check reads the tags of the pages a call moves, never the pool. The
positions make the usual check one gather: pages that one ``alloc`` handed
out carry consecutive tags, and the same page listed twice carries the same
tag twice, so consecutive tags prove the pages are all a caller's and all
distinct. Anything else (a row built from several allocations, or a misuse)
takes the slower exact check, and only a misuse raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

FREE_TAG = -1
CACHED_TAG = -2

# The states as ``KVPool.slot_owners`` reports them.
CALLER = 0
FREE = 1
CACHED = 2

# How an error names pages in each state: what the slot is, and how it got there.
_STATE_WORDS = {
    FREE: "free in the pool (freed already, never handed out, or another pool's)",
    CACHED: "owned by a cached node (only its cache frees those: evict, reset)",
    CALLER: "held by a caller, not by the cache",
}
_SHOWN = 6  # slots named per error line; the rest are counted


def describe_slots(slots: list[int], page_size: int) -> str:
    """``"slots 0..3, 8..11 are"`` (pages) or ``"slot 5 is"``, at most a few named.

    ``slots`` are the first slot of each page named.
    """
    shown = [f"{s}..{s + page_size - 1}" if page_size > 1 else str(s) for s in slots[:_SHOWN]]
    more = f" and {len(slots) - _SHOWN} more" if len(slots) > _SHOWN else ""
    if len(slots) == 1 and page_size == 1:
        return f"slot {shown[0]} is"
    return f"slots {', '.join(shown)}{more} are"


class PageOwners:
    """One owner tag per page, plus a scratch row for the exact repeat check.

    The arrays are torch tensors on the pool's device; on cpu they are driven
    through numpy views, as the pool's own state is.
    """

    def __init__(self, num_pages: int, page_size: int, device: torch.device) -> None:
        self.page_size = page_size
        self._num_pages = num_pages
        self._on_cpu = device.type == "cpu"
        # int32 halves the memory every gather and scatter touches; positions fit in it
        # up to two billion pages.
        kind = torch.int32 if num_pages < 2**31 - 1 else torch.int64
        tag = torch.full((num_pages,), FREE_TAG, dtype=kind, device=device)
        mark = torch.zeros(num_pages, dtype=kind, device=device)
        count = torch.arange(num_pages, dtype=kind, device=device)
        self._tensors = (tag, mark, count)  # keeps the storage behind numpy views alive
        self.tag: Any = tag.numpy() if self._on_cpu else tag
        self._mark: Any = mark.numpy() if self._on_cpu else mark
        self.count: Any = count.numpy() if self._on_cpu else count  # 0, 1, 2, ... (views)

    # ---------------------------------------------------------- transfers
    def hand_out(self, pages: Any, position: int) -> None:
        """``pages`` (free-list positions ``position...``) are now the caller's."""
        self.tag[pages] = self.count[position : position + len(pages)]

    def adopt(self, pages: Any) -> None:
        """A cache node owns the caller's ``pages`` (checked by ``check_caller``)."""
        self.tag[pages] = CACHED_TAG

    def give_back(self, pages: Any) -> None:
        """``pages`` are free again."""
        self.tag[pages] = FREE_TAG

    def disown(self, pages: Any) -> None:
        """A cache node's ``pages`` are the caller's again (for a ``free`` override to free)."""
        self.tag[pages] = self.count[: len(pages)]

    # -------------------------------------------------------------- checks
    def check_caller(self, pages: Any, what: str) -> None:
        """Raise ValueError, naming the culprits, unless each page is a caller's, once.

        ``what`` starts the message, e.g. ``"KVPool.free: indices"``.
        """
        k = len(pages)
        if k == 0:
            return
        held = self.tag[pages]
        first = int(held[0])
        if first >= 0:
            if k == 1:
                return
            stop = first + k
            if stop <= self._num_pages and self._same(held, self.count[first:stop]):
                return  # one alloc's pages, in order: the usual case, one gather
        if not bool((held < 0).any()):
            if not self._has_repeats(pages):
                return  # a caller's pages from several allocations
            raise ValueError(f"{what}: {self._repeated(pages)}")
        raise ValueError(f"{what}: {self._misowned(pages, held, CALLER)}")

    def _same(self, a: Any, b: Any) -> bool:
        """Whether two tag arrays are equal; on cpu one memcmp (both are contiguous)."""
        if self._on_cpu:
            return bool(a.tobytes() == b.tobytes())
        return bool(torch.equal(a, b))

    def check_cached(self, pages: Any, what: str) -> None:
        """Raise ValueError, naming the culprits, unless every page is a cache node's."""
        if len(pages) == 0:
            return
        held = self.tag[pages]
        if int(held.max()) != CACHED_TAG:  # the lowest tag: the max says all of them
            raise ValueError(f"{what}: {self._misowned(pages, held, CACHED)}")

    def _has_repeats(self, pages: Any) -> bool:
        """Whether some page is listed twice: each page writes its position, a repeat loses one."""
        k = len(pages)
        mark, positions = self._mark, self.count[:k]
        mark[pages] = positions
        return not bool((mark[pages] == positions).all())

    def _misowned(self, pages: Any, held: Any, state: int) -> str:
        states = _states_of(_host(held))
        pages_np = _host(pages)
        P = self.page_size
        parts = []
        for other, words in _STATE_WORDS.items():
            bad = pages_np[states == other] if other != state else pages_np[:0]
            if len(bad):
                parts.append(f"{describe_slots([int(p) * P for p in bad], P)} {words}")
        return "; ".join(parts)

    def _repeated(self, pages: Any) -> str:
        uniq, counts = np.unique(_host(pages), return_counts=True)
        P = self.page_size
        twice = [int(p) * P for p in uniq[counts > 1]]
        return f"{describe_slots(twice, P)} listed more than once (a slot has one owner)"

    def states(self) -> np.ndarray:
        """The state (``CALLER``, ``FREE``, ``CACHED``) of every page, on the host."""
        return _states_of(_host(self.tag))


def _states_of(tags: np.ndarray) -> np.ndarray:
    out = np.full(len(tags), CALLER, dtype=np.uint8)
    out[tags == FREE_TAG] = FREE
    out[tags == CACHED_TAG] = CACHED
    return out


def _host(values: Any) -> np.ndarray:
    return values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
