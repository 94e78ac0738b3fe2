"""The C page loops decide exactly as the numpy checks they stand in for.

Two owner tables take the same random transfers and checks, one through
``_page_kernel`` and one through numpy; every check must pass or fail alike
(with the same message) and leave the same free list and tags behind. The
pages checked include every misuse: outside the pool, negative, free, a
node's, listed twice, from several allocations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from radix_evict.cache import compiled
from radix_evict.cache.ownership import PageOwners

KERNEL = compiled.page_kernel()
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the C page loops are not built here")

NUM_PAGES = 24


def owner_pair() -> tuple[PageOwners, PageOwners]:
    fast = PageOwners(NUM_PAGES, 1, torch.device("cpu"))
    slow = PageOwners(NUM_PAGES, 1, torch.device("cpu"))
    assert fast._kernel is not None
    slow._kernel = None
    return fast, slow


def both(pair: tuple[PageOwners, PageOwners], method: str, *args: Any) -> str:
    """``method(*args)`` on each owner table: "ok" or the error, the same for both."""
    got = []
    for owners in pair:
        try:
            getattr(owners, method)(*args)
            got.append("ok")
        except ValueError as e:
            got.append(f"ValueError: {e}")
    assert got[0] == got[1], (method, args)
    return got[0]


def same_state(a: PageOwners, b: PageOwners) -> None:
    assert a.head == b.head
    assert a.stack[a.head :].tolist() == b.stack[b.head :].tolist(), "free lists differ"
    assert (a.states() == b.states()).all(), "owner states differ"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_kernel_and_numpy_agree_on_every_transfer_and_check(data: st.DataObject) -> None:
    fast, slow = owner_pair()
    held: list[list[int]] = []  # the callers' allocations
    nodes: list[list[int]] = []  # what "cache nodes" hold
    page = st.integers(-2 * NUM_PAGES, 2 * NUM_PAGES)
    for _ in range(data.draw(st.integers(1, 25))):
        op = data.draw(st.sampled_from(["alloc", "free", "adopt", "release", "check", "cached"]))
        if op == "alloc":
            k = data.draw(st.integers(0, NUM_PAGES - fast.head))
            got = fast.pop(k).tolist()
            assert got == slow.pop(k).tolist()
            if got:
                held.append(got)
        elif op in ("free", "adopt") and held:
            pages = np.array(held.pop(data.draw(st.integers(0, len(held) - 1))), dtype=np.int64)
            for owners in (fast, slow):
                owners.check_caller(pages, "take")
                (owners.push if op == "free" else owners.adopt)(pages)
            if op == "adopt":
                nodes.append(pages.tolist())
        elif op == "release" and nodes:
            picks = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=3))
            parts = [np.array(nodes[i], dtype=np.int64) for i in picks]
            if both((fast, slow), "release", parts, "release") == "ok":
                nodes = [n for i, n in enumerate(nodes) if i not in set(picks)]
        else:  # a check with pages drawn from anywhere, misuse included
            known = [p for run in held + nodes for p in run] or [0]
            mixed = st.one_of(page, st.sampled_from(known))
            pages = np.array(data.draw(st.lists(mixed, max_size=8)), dtype=np.int64)
            if data.draw(st.booleans()) and held:  # often a whole allocation, in order
                pages = np.array(data.draw(st.sampled_from(held)), dtype=np.int64)
            check = "check_caller" if op != "cached" else "check_cached"
            verdict = both((fast, slow), check, pages, "check")
            # A node's pages that pass are also released, through the kernel's own check.
            if op == "cached" and verdict == "ok":
                assert both((fast, slow), "release", [pages], "release") == "ok"
                gone = set(pages.tolist())
                nodes = [[p for p in n if p not in gone] for n in nodes]
        same_state(fast, slow)


def test_a_failed_release_frees_nothing_and_names_the_page() -> None:
    fast, slow = owner_pair()
    for owners in (fast, slow):
        node = owners.pop(4).copy()
        owners.adopt(node)
        caller = owners.pop(1).copy()
        before = owners.tag.copy(), owners.head
        with pytest.raises(ValueError, match=r"slot 4 is held by a caller"):
            owners.release([node[:2], caller, node[2:]], "release")
        with pytest.raises(ValueError, match=r"slot 1 .*listed more than once"):
            owners.release([node, node[1:2]], "release")
        assert (owners.tag == before[0]).all() and owners.head == before[1]


def test_strided_arrays_are_read_with_their_stride() -> None:
    fast, slow = owner_pair()
    for owners in (fast, slow):
        pages = owners.pop(6).copy()
        owners.check_caller(pages[::2], "check")  # every other page: still a caller's, once
        owners.adopt(pages[::2])
    same_state(fast, slow)
    assert fast.tag[[0, 2, 4]].tolist() == [-1, -1, -1]


def test_the_kernel_refuses_arrays_of_the_wrong_type() -> None:
    fast, _ = owner_pair()
    with pytest.raises(TypeError, match="pages: expected a 1-D array of 8-byte signed integers"):
        KERNEL.adopt(fast.tag, np.zeros(2, dtype=np.int32))  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="tag"):
        KERNEL.callers_only(  # type: ignore[union-attr]
            fast.stack, fast.stack, fast._mark, np.zeros(1, dtype=np.int64), 0
        )
