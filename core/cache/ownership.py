"""Who holds each page of a :class:`~radix_evict.KVPool`: the pool, a caller, or a cache.

A slot handed out twice is KV two requests overwrite, so every transfer of
pages is checked against one byte per page:

- ``FREE``: in the pool's free list; ``alloc`` hands it out.
- ``CALLER``: handed out by ``alloc``; the caller may ``free`` it or give it to
  a cache's ``insert``.
- ``CACHED``: a cache node owns it; only that cache gives it back (``evict``,
  ``reset``), never a caller's ``free``.

Each check is a few vectorised operations over the pages a call moves, never
over the pool. ``CALLER`` is 0 so that one ``any()`` answers "are these all
the caller's?" on the hot path; naming the culprits is left to the error path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

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
    """One owner byte per page, plus a scratch row that finds a page listed twice.

    The arrays are torch tensors on the pool's device; on cpu they are driven
    through numpy views, as the pool's own state is.
    """

    def __init__(self, num_pages: int, page_size: int, device: torch.device) -> None:
        self.page_size = page_size
        self._on_cpu = device.type == "cpu"
        owner = torch.full((num_pages,), FREE, dtype=torch.uint8, device=device)
        mark = torch.zeros(num_pages, dtype=torch.int64, device=device)
        count = torch.arange(num_pages, dtype=torch.int64, device=device)
        self._tensors = (owner, mark, count)  # keeps the storage behind numpy views alive
        self.owner: Any = owner.numpy() if self._on_cpu else owner
        self._mark: Any = mark.numpy() if self._on_cpu else mark
        self._count: Any = count.numpy() if self._on_cpu else count

    # -------------------------------------------------------------- checks
    def check(self, pages: Any, state: int, what: str) -> None:
        """Raise ValueError, naming the culprits, unless every page is in ``state``, once.

        ``what`` starts the message, e.g. ``"KVPool.free: indices"``.
        """
        self.check_state(pages, state, what)
        if len(pages) > 1 and self.has_repeats(pages):
            raise ValueError(f"{what}: {self._repeated(pages)}")

    def check_state(self, pages: Any, state: int, what: str) -> None:
        """Raise ValueError, naming the culprits, unless every page is in ``state``."""
        if len(pages) == 0:
            return
        held = self.owner[pages]
        wrong = bool(held.any()) if state == CALLER else bool((held != state).any())
        if wrong:
            raise ValueError(f"{what}: {self._misowned(pages, held, state)}")

    def has_repeats(self, pages: Any) -> bool:
        """Whether some page is listed twice: each page writes its position, a repeat loses one."""
        k = len(pages)
        mark, positions = self._mark, self._count[:k]
        mark[pages] = positions
        return not bool((mark[pages] == positions).all())

    def _misowned(self, pages: Any, held: Any, state: int) -> str:
        held_np = _host(held)
        pages_np = _host(pages)
        P = self.page_size
        parts = []
        for other, words in _STATE_WORDS.items():
            bad = pages_np[held_np == other] if other != state else pages_np[:0]
            if len(bad):
                parts.append(f"{describe_slots([int(p) * P for p in bad], P)} {words}")
        return "; ".join(parts)

    def _repeated(self, pages: Any) -> str:
        pages_np = _host(pages)
        uniq, counts = np.unique(pages_np, return_counts=True)
        P = self.page_size
        twice = [int(p) * P for p in uniq[counts > 1]]
        return f"{describe_slots(twice, P)} listed more than once (a slot has one owner)"

    # ---------------------------------------------------------- transfers
    def set(self, pages: Any, state: int) -> None:
        """Move ``pages`` to ``state``; the caller has checked the move is allowed."""
        self.owner[pages] = state

    def states(self) -> np.ndarray:
        """A copy of the owner byte of every page, on the host (for checks and tests)."""
        return _host(self.owner).copy()


def _host(values: Any) -> np.ndarray:
    return values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
