"""Who holds each page of a :class:`~radix_evict.KVPool`: the pool, a caller, or a cache.

A slot handed out twice is KV two requests overwrite, so every transfer of
pages is checked. The pool's free pages live in ``stack[head:]``: ``alloc``
takes from the front by moving ``head`` (writing nothing per page), a free
pushes pages back in front of it. One tag per page says who holds it:

- a cache node's: ``CACHED_TAG``; only that cache gives it back (``evict``,
  ``reset``), never a caller's ``free``;
- otherwise the position the page was last pushed to, ``w``: the page is free
  exactly when ``w >= head`` and ``stack[w]`` is the page (the position was
  not reused since), and a caller's (handed out by ``alloc``) otherwise.

Each check reads the tags of the pages a call moves, never the pool. The
positions make the usual check one gather: the pages one ``alloc`` handed out
carry consecutive tags, and a page listed twice carries its tag twice, so
consecutive tags prove the pages distinct and none a node's; only those at
positions at or above ``head`` need one more look to rule out a free page.
Anything else (a row built from several allocations, or a misuse) takes the
slower exact check, and only a misuse raises.

The state is numpy on the host whatever device the KV is on (see
:class:`~radix_evict.cache.args.SlotDevice`). The per-page loops run in C
(``_page_kernel.c``, one pass where numpy makes several: on the request path
that is most of an insert's cost); the numpy version here runs in the
interpreted build, and names the culprits whenever a check fails. The same loops turn a
caller's row of slots into its pages and check them in one call
(:meth:`PageOwners.caller_slots`, and :meth:`PageOwners.free_slots` for a
whole ``free``); ``KVPool`` spells pages out as slots with them.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import torch

from radix_evict.cache.compiled import page_kernel

CACHED_TAG = -1
_KERNEL: Any = page_kernel()
# Read once: a compiled module reads a Final from a C global, not through ``np``'s dict.
_EMPTY: Final = np.empty
_INT64: Final = np.dtype(np.int64)

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


def host_loops() -> Any:
    """The C page loops over host int64 arrays, or None (not built: numpy stands in)."""
    return _KERNEL


def describe_outside(slots: Any, size: int) -> str:
    """``"slots 100, 101 outside the pool (0..15)"``: the ones not in a pool of ``size``."""
    arr = _host(slots)
    bad = arr[(arr < 0) | (arr >= size)]
    shown = ", ".join(str(int(s)) for s in bad[:_SHOWN])
    more = f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
    noun = "slot" if len(bad) == 1 else "slots"
    return f"{noun} {shown}{more} outside the pool (0..{size - 1})"


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
    """The pool's free list and one owner tag per page, plus a scratch row for repeats.

    The arrays are numpy on the host, whatever device the KV is on: these
    calls sit on every request's path, and numpy's per-call cost is a
    fraction of torch's (a GPU kernel launch's, more so).
    """

    def __init__(self, num_pages: int, page_size: int) -> None:
        self.page_size = page_size
        self.num_pages = num_pages
        # int32 halves the memory every gather and scatter of tags touches; positions
        # fit in it up to two billion pages.
        kind = np.int32 if num_pages < 2**31 - 1 else np.int64
        self.stack: Any = np.arange(num_pages, dtype=np.int64)
        self.tag: Any = np.arange(num_pages, dtype=kind)  # page p pushed at p
        self._mark: Any = np.zeros(num_pages, dtype=kind)
        self.count: Any = np.arange(num_pages, dtype=kind)  # 0, 1, 2, ... (sliced as views)
        self.head = 0
        # The C loops take int32 tags (so, up to two billion pages).
        self._kernel: Any = _KERNEL if kind is np.int32 else None
        # What the C loops are handed for the three arrays: memoryviews made once, which
        # re-export their buffer for a fraction of what a numpy array's export costs
        # (three exports on every call, several calls a request).
        self._tag_buf: Any = None
        self._stack_buf: Any = None
        self._mark_buf: Any = None
        if self._kernel is not None:
            self._tag_buf = self.tag.data
            self._stack_buf = self.stack.data
            self._mark_buf = self._mark.data
        # Its loops that read no tags (slots to pages and back), for any pool.
        self.loops: Any = host_loops()

    # ---------------------------------------------------------- transfers
    def pop(self, k: int) -> Any:
        """The next ``k`` free pages, now the caller's (a view: copy before the next push)."""
        h = self.head
        self.head = h + k
        return self.stack[h : h + k]

    def push(self, pages: Any) -> None:
        """``pages`` are free again; the caller has checked they may be."""
        k = len(pages)
        if k == 0:
            return
        if self._kernel is not None:
            self.head = self._kernel.push(self._tag_buf, self._stack_buf, [pages], self.head)
            return
        h = self.head - k
        self.stack[h : h + k] = pages
        self.tag[pages] = self.count[h : h + k]
        self.head = h

    def adopt(self, pages: Any) -> None:
        """A cache node owns the caller's ``pages`` (checked by ``check_caller``)."""
        if self._kernel is not None:
            self._kernel.adopt(self._tag_buf, pages)
        else:
            self.tag[pages] = CACHED_TAG

    def release(self, parts: list[Any], what: str) -> None:
        """Free the pages of a cache's nodes (``parts``, one array a node), all or none.

        Raises ValueError, naming the culprits and freeing nothing, unless every
        page is a node's and listed once.
        """
        if not parts:
            return
        kernel = self._kernel
        if kernel is not None:
            head = kernel.release(self._tag_buf, self._stack_buf, parts, self.head)
            if head >= 0:
                self.head = head
                return
            raise ValueError(f"{what}: {self._cached_fault(np.concatenate(parts))}")
        pages = parts[0] if len(parts) == 1 else np.concatenate(parts)
        self.check_cached(pages, what)
        self.push(pages)

    def disown(self, pages: Any) -> None:
        """A cache node's ``pages`` are the caller's again (for a ``free`` override to free).

        Tag 0 is below ``head`` whenever any page is handed out, so it reads
        "a caller's".
        """
        self.tag[pages] = 0

    # -------------------------------------------------------------- checks
    def check_caller(self, pages: Any, what: str) -> None:
        """Raise ValueError, naming the culprits, unless each page is in the pool, a caller's, once.

        ``what`` starts the message, e.g. ``"KVPool.free: indices"``.
        """
        if not self.callers_ok(pages):
            raise ValueError(f"{what}: {self._caller_fault(pages)}")

    def caller_slots(self, slots: Any) -> Any:
        """The pages of ``slots`` (a cpu int64 array), if the C loops find them whole, aligned
        pages of the pool, each a caller's and listed once; None otherwise, or without the
        loops (``check_caller`` and ``KVPool._whole_pages`` then decide, and name culprits).
        """
        P = self.page_size
        kernel = self._kernel
        if kernel is not None:
            pages = _EMPTY(len(slots) // P, _INT64)
            k = kernel.caller_slots(
                self._tag_buf, self._stack_buf, self._mark_buf, slots, P, self.head, pages
            )
            return pages if k >= 0 else None
        loops = self.loops
        if loops is None:
            return None
        pages = _EMPTY(len(slots) // P, _INT64)
        if loops.pages_of(slots, P, self.num_pages * P, pages) < 0:
            return None
        return pages if self._callers_only(pages) else None

    def free_slots(self, slots: Any) -> bool:
        """Free a caller's ``slots`` (a cpu int64 array) in one pass of the C loops, if they
        are whole, aligned pages of the pool, each a caller's and listed once; False,
        changing nothing, otherwise or without the loops (``KVPool.free`` then decides).
        """
        kernel = self._kernel
        if kernel is None:
            return False
        head = kernel.free_slots(
            self._tag_buf, self._stack_buf, self._mark_buf, slots, self.page_size, self.head
        )
        if head < 0:
            return False
        self.head = head
        return True

    def callers_ok(self, pages: Any) -> bool:
        """``check_caller``'s verdict, without naming anything."""
        if len(pages) == 0:
            return True
        if self._kernel is not None:
            return bool(
                self._kernel.callers_only(
                    self._tag_buf, self._stack_buf, self._mark_buf, pages, self.head
                )
            )
        return self._callers_only(pages)

    def check_cached(self, pages: Any, what: str) -> None:
        """Raise ValueError, naming the culprits, unless every page is a cache node's, once."""
        if len(pages) == 0:
            return
        # CACHED_TAG is the lowest tag: the max says all of them.
        if (
            self._outside_any(pages)
            or int(self.tag[pages].max()) != CACHED_TAG
            or self._has_repeats(pages)
        ):
            raise ValueError(f"{what}: {self._cached_fault(pages)}")

    # The numpy version of the C loops, and what names a check's culprits.
    def _callers_only(self, pages: Any) -> bool:
        """``check_caller``'s test: every page in the pool, a caller's, listed once."""
        if self._outside_any(pages):
            return False
        k = len(pages)
        held = self.tag[pages]
        first = int(held[0])
        stop = first + k
        if first >= 0 and (
            k == 1 or (stop <= self.num_pages and self._same(held, self.count[first:stop]))
        ):
            # Distinct pages, none a node's. Those pushed below head were handed out since;
            # one at or above it is free if its position still holds it.
            h = self.head
            if stop <= h:
                return True
            lo = max(first, h)
            return not bool((self.stack[lo:stop] == pages[lo - first :]).any())
        if bool((held == CACHED_TAG).any()) or bool(self._free_among(pages, held).any()):
            return False
        return not self._has_repeats(pages)  # a caller's pages from several allocations

    def _caller_fault(self, pages: Any) -> str:
        """What makes ``pages`` fail ``check_caller``: outside, not a caller's, or repeated."""
        if self._outside_any(pages):
            return describe_outside(_host(pages) * self.page_size, self.num_pages * self.page_size)
        held = self.tag[pages]
        if bool((held == CACHED_TAG).any()) or bool(self._free_among(pages, held).any()):
            return self._misowned(pages, held, CALLER)
        return self._repeated(pages)

    def _cached_fault(self, pages: Any) -> str:
        """What makes ``pages`` fail ``check_cached``: outside, not a node's, or repeated."""
        if self._outside_any(pages):
            return describe_outside(_host(pages) * self.page_size, self.num_pages * self.page_size)
        held = self.tag[pages]
        if int(held.max()) != CACHED_TAG:
            return self._misowned(pages, held, CACHED)
        return self._repeated(pages)

    def _outside_any(self, pages: Any) -> bool:
        """Whether some page is not in the pool."""
        # One pass: a negative page wraps to a huge one.
        return int(pages.view(np.uint64).max()) >= self.num_pages

    def _free_among(self, pages: Any, held: Any) -> Any:
        """Which of ``pages`` (tags ``held``) are free: pushed at or above head, still there."""
        stack = self.stack
        at = held.clip(0, len(stack) - 1)
        return (held >= self.head) & (stack[at] == pages)

    def _same(self, a: Any, b: Any) -> bool:
        """Whether two tag arrays are equal: one memcmp (both are contiguous)."""
        return bool(a.tobytes() == b.tobytes())

    def _has_repeats(self, pages: Any) -> bool:
        """Whether some page is listed twice: each page writes its position, a repeat loses one."""
        k = len(pages)
        if k > self.num_pages:
            return True  # more pages than the pool has
        mark, positions = self._mark, self.count[:k]
        mark[pages] = positions
        return not bool((mark[pages] == positions).all())

    def _misowned(self, pages: Any, held: Any, state: int) -> str:
        states = self._states_of(pages, held)
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

    def _states_of(self, pages: Any, held: Any) -> np.ndarray:
        out = np.full(len(pages), CALLER, dtype=np.uint8)
        out[_host(self._free_among(pages, held))] = FREE
        out[_host(held) == CACHED_TAG] = CACHED
        return out

    def states(self) -> np.ndarray:
        """The state (``CALLER``, ``FREE``, ``CACHED``) of every page, on the host."""
        return self._states_of(self.count.astype(np.int64), self.tag)


def _host(values: Any) -> np.ndarray:
    return values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
