"""Every implementation of the pool's page checks decides alike.

Owner tables take the same random transfers and checks: one through the C
page loops (``_page_kernel``, where built) and one through numpy (the
interpreted build's way); a pool on any device keeps this state on the host,
so these are all the implementations there are. Every check
must pass or fail alike, with the same message, and leave the same free list
and owners behind. The pages checked include every misuse: outside the pool,
negative, free, a node's, listed twice, from several allocations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from radix_evict import KVPool
from radix_evict.cache import compiled
from radix_evict.cache.ownership import PageOwners

KERNEL = compiled.page_kernel()
NEEDS_KERNEL = pytest.mark.skipif(KERNEL is None, reason="the C page loops are not built here")

NUM_PAGES = 24


def numpy_owners() -> PageOwners:
    owners = PageOwners(NUM_PAGES, 1)
    owners._kernel = None
    return owners


def twins() -> list[PageOwners]:
    """The implementations to compare; the first is the one the tests read state from."""
    made = [numpy_owners()]
    if KERNEL is not None:
        made.insert(0, PageOwners(NUM_PAGES, 1))
        assert made[0]._kernel is not None
    return made


def as_input(owners: PageOwners, value: Any) -> Any:
    """``value`` (pages, or a list of them), a copy for each implementation."""
    if isinstance(value, list):
        return [as_input(owners, v) for v in value]
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def on_all(tables: list[PageOwners], method: str, *args: Any) -> str:
    """``method(*args)`` on each owner table: "ok" or the error, the same for all."""
    got = []
    for owners in tables:
        try:
            getattr(owners, method)(*(as_input(owners, a) for a in args))
            got.append("ok")
        except ValueError as e:
            got.append(f"ValueError: {e}")
    assert len(set(got)) == 1, (method, args, got)
    return got[0]


def host(values: Any) -> list[int]:
    return values.tolist()


def same_state(tables: list[PageOwners]) -> None:
    first = tables[0]
    for other in tables[1:]:
        assert other.head == first.head
        assert host(other.stack[other.head :]) == host(first.stack[first.head :]), "free lists"
        assert (other.states() == first.states()).all(), "owner states differ"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_all_implementations_agree_on_every_transfer_and_check(data: st.DataObject) -> None:
    tables = twins()
    held: list[list[int]] = []  # the callers' allocations
    nodes: list[list[int]] = []  # what "cache nodes" hold
    page = st.integers(-2 * NUM_PAGES, 2 * NUM_PAGES)
    for _ in range(data.draw(st.integers(1, 25))):
        op = data.draw(st.sampled_from(["alloc", "free", "adopt", "release", "check", "cached"]))
        if op == "alloc":
            k = data.draw(st.integers(0, NUM_PAGES - tables[0].head))
            got = [host(owners.pop(k)) for owners in tables]
            assert all(g == got[0] for g in got)
            if got[0]:
                held.append(got[0])
        elif op in ("free", "adopt") and held:
            pages = np.array(held.pop(data.draw(st.integers(0, len(held) - 1))), dtype=np.int64)
            assert on_all(tables, "check_caller", pages, "take") == "ok"
            on_all(tables, "push" if op == "free" else "adopt", pages)
            if op == "adopt":
                nodes.append(pages.tolist())
        elif op == "release" and nodes:
            picks = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=3))
            parts = [np.array(nodes[i], dtype=np.int64) for i in picks]
            if on_all(tables, "release", parts, "release") == "ok":
                nodes = [n for i, n in enumerate(nodes) if i not in set(picks)]
        else:  # a check with pages drawn from anywhere, misuse included
            known = [p for run in held + nodes for p in run] or [0]
            mixed = st.one_of(page, st.sampled_from(known))
            pages = np.array(data.draw(st.lists(mixed, max_size=8)), dtype=np.int64)
            if data.draw(st.booleans()) and held:  # often a whole allocation, in order
                pages = np.array(data.draw(st.sampled_from(held)), dtype=np.int64)
            check = "check_caller" if op != "cached" else "check_cached"
            verdict = on_all(tables, check, pages, "check")
            # A node's pages that pass are also released, through the kernel's own check.
            if op == "cached" and verdict == "ok":
                assert on_all(tables, "release", [pages], "release") == "ok"
                gone = set(pages.tolist())
                nodes = [[p for p in n if p not in gone] for n in nodes]
        same_state(tables)


def test_a_failed_release_frees_nothing_and_names_the_page() -> None:
    tables = twins()
    node = np.arange(4, dtype=np.int64)  # the first four pages, adopted by a node
    caller = np.array([4], dtype=np.int64)  # the next one, a caller's
    for owners in tables:
        owners.pop(5)
        owners.adopt(as_input(owners, node))
    before = [(host(owners.tag), owners.head) for owners in tables]
    assert on_all(tables, "release", [node[:2], caller, node[2:]], "r").endswith(
        "slot 4 is held by a caller, not by the cache")
    assert "slot 1 is listed more than once" in on_all(tables, "release", [node, node[1:2]], "r")
    assert [(host(owners.tag), owners.head) for owners in tables] == before


def test_a_release_of_many_nodes_is_checked_across_all_of_them() -> None:
    """More arrays than the C loops keep on their stack: a repeat between far-apart
    nodes is still found, and a whole release still frees every page."""
    tables = twins()
    nodes = [np.array([2 * i, 2 * i + 1], dtype=np.int64) for i in range(11)]
    for owners in tables:
        owners.pop(22)
        owners.adopt(as_input(owners, np.concatenate(nodes)))
    before = [(host(owners.tag), owners.head) for owners in tables]
    repeated = [*nodes, nodes[1][1:]]
    assert "slot 3 is listed more than once" in on_all(tables, "release", repeated, "r")
    outside = [*nodes[:10], np.array([NUM_PAGES + 5], dtype=np.int64)]
    assert "outside the pool" in on_all(tables, "release", outside, "r")
    assert [(host(owners.tag), owners.head) for owners in tables] == before
    assert on_all(tables, "release", nodes, "r") == "ok"
    assert [owners.head for owners in tables] == [0] * len(tables)
    same_state(tables)


def test_releasing_nothing_changes_nothing() -> None:
    tables = twins()
    for owners in tables:
        owners.pop(3)
    assert on_all(tables, "release", [], "release") == "ok"
    assert on_all(tables, "release", [np.empty(0, dtype=np.int64)] * 2, "release") == "ok"
    assert [owners.head for owners in tables] == [3] * len(tables)


def test_strided_arrays_are_read_with_their_stride() -> None:
    tables = twins()
    pages = np.arange(6, dtype=np.int64)
    for owners in tables:
        owners.pop(6)
    # Every other page of an allocation: still a caller's, once.
    assert on_all(tables, "check_caller", pages[::2], "check") == "ok"
    on_all(tables, "adopt", pages[::-2])  # and backwards
    same_state(tables)
    assert host(tables[0].tag[[1, 3, 5]]) == [-1, -1, -1]


@NEEDS_KERNEL
def test_the_kernel_refuses_arrays_of_the_wrong_type() -> None:
    fast = twins()[0]
    with pytest.raises(TypeError, match="pages: expected a 1-D array of 8-byte signed integers"):
        KERNEL.adopt(fast.tag, np.zeros(2, dtype=np.int32))  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="tag"):
        KERNEL.callers_only(  # type: ignore[union-attr]
            fast.stack, fast.stack, fast._mark, np.zeros(1, dtype=np.int64), 0
        )


# ------------------------------------------------------------------ slots <-> pages
# The pool's conversions between slots and pages (``KVPool.caller_pages``, ``page_slots``,
# ``parts_slots``), through the C loops and through numpy, on twin pools.

def pool_twins(size: int, page_size: int) -> list[KVPool]:
    """A pool with the C loops (where built) and one where numpy does everything."""
    slow = KVPool(size, page_size=page_size, device="cpu")
    slow._loops = None
    slow.owners._kernel = None
    slow.owners.loops = None
    pools = [slow]
    if KERNEL is not None:
        fast = KVPool(size, page_size=page_size, device="cpu")
        assert fast._loops is not None and fast.owners._kernel is not None
        pools.insert(0, fast)
    return pools


def on_pools(pools: list[KVPool], method: str, *args: Any) -> Any:
    """``method(*args)`` on each pool: its result as a list, or the error; the same for all."""
    got = []
    for pool in pools:
        try:
            out = getattr(pool, method)(*[a.copy() if isinstance(a, np.ndarray) else a
                                          for a in args])
            got.append(host(out) if isinstance(out, np.ndarray) else out)
        except ValueError as e:
            got.append(f"ValueError: {e}")
    assert all(g == got[0] for g in got), (method, args, got)
    return got[0]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_slot_rows_are_checked_alike_by_the_c_loops_and_numpy(data: st.DataObject) -> None:
    P = data.draw(st.sampled_from([1, 2, 4, 16]))
    num_pages = 12
    pools = pool_twins(num_pages * P, P)
    held: list[np.ndarray] = []
    for _ in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(["alloc", "free", "check", "spell"]))
        if op == "alloc":
            k = data.draw(st.integers(0, num_pages - pools[0].owners.head))
            rows = [pool.alloc(k * P) for pool in pools]
            assert all(r is not None and r.tolist() == rows[0].tolist() for r in rows)
            if k:
                held.append(rows[0].numpy().copy())
        elif op == "free" and held:
            row = held.pop(data.draw(st.integers(0, len(held) - 1)))
            assert on_pools(pools, "free", torch.from_numpy(row)) is None
        elif op == "spell":  # pages to slots, one array or several
            parts = [np.array(data.draw(st.lists(st.integers(0, num_pages - 1), max_size=5)),
                              dtype=np.int64) for _ in range(data.draw(st.integers(1, 3)))]
            want = [s for part in parts for p in part.tolist() for s in range(p * P, p * P + P)]
            assert on_pools(pools, "page_slots", parts[0]) == want[: len(parts[0]) * P]
            assert on_pools(pools, "parts_slots", parts) == want
        else:  # a row of slots from anywhere (a caller's, broken, outside, strided, repeated),
            # checked as an insert's or freed
            known = [int(s) for row in held for s in row] or [0]
            slot = st.one_of(st.integers(-P, (num_pages + 1) * P), st.sampled_from(known))
            row = np.array(data.draw(st.lists(slot, max_size=4 * P)), dtype=np.int64)
            if held and data.draw(st.booleans()):
                row = data.draw(st.sampled_from(held))
                cut = data.draw(st.integers(0, len(row) // P)) * P
                row = np.concatenate([row[cut:], row[:cut]])  # whole pages, reordered
                if data.draw(st.booleans()):
                    row = row.copy()
                    row[data.draw(st.integers(0, len(row) - 1))] += data.draw(
                        st.sampled_from([-1, 1, P]))
            if data.draw(st.booleans()):  # the same slots read with a stride
                spread = np.zeros(2 * len(row), dtype=np.int64)
                spread[::2] = row
                row = spread[::2]
            if data.draw(st.booleans()):
                on_pools(pools, "caller_pages", row, "check", 3, 7)
            elif on_pools(pools, "free", torch.from_numpy(row)) is None:  # freed: not held
                gone = {int(s) for s in row}
                held = [r for r in held if not gone & {int(s) for s in r}]
        states = [pool.owners.states().tolist() for pool in pools]
        assert all(s == states[0] for s in states)
        assert len({pool.owners.head for pool in pools}) == 1


def test_a_refused_row_names_its_slice_only_when_it_fails() -> None:
    pools = pool_twins(64, 16)
    row = np.arange(16, 48, dtype=np.int64)
    for pool in pools:
        pool.alloc(48)
    assert on_pools(pools, "caller_pages", row, "insert: indices", 16, 48) == [1, 2]
    row[20] = 0
    assert on_pools(pools, "caller_pages", row, "insert: indices", 16, 48) == (
        "ValueError: insert: indices[16:48]: slots are not whole, aligned pages of 16 "
        "(each page is its slots in order, as alloc hands them out)")


@NEEDS_KERNEL
def test_common_prefix_counts_whole_tokens_from_the_offset() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        a = rng.integers(0, 3, size=int(rng.integers(0, 12)), dtype=np.int64)
        b = rng.integers(0, 3, size=int(rng.integers(0, 12)), dtype=np.int64)
        off = int(rng.integers(0, len(b) + 1))
        n = min(len(a), len(b) - off)
        diff = np.flatnonzero(a[:n] != b[off : off + n])
        want = int(diff[0]) if len(diff) else n
        view = memoryview(b).cast("B")
        assert KERNEL.common_prefix(a.tobytes(), view, off * 8) == want  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="not whole tokens"):
        KERNEL.common_prefix(b"12345678", b"1234567", 0)  # type: ignore[union-attr]


@NEEDS_KERNEL
def test_common_prefix_of_long_keys_across_its_compare_blocks() -> None:
    """Long shared runs (the walk's usual case) are compared a block of 64 tokens at a time:
    a first difference just before, on or after a block edge, or in the last partial block,
    at any offset, is found at the token where it is."""
    rng = np.random.default_rng(5)
    edges = [0, 1, 63, 64, 65, 127, 128, 129, 191, 255, 256, 300]
    for _ in range(400):
        n = int(rng.integers(0, 400))
        off = int(rng.integers(0, 70))
        b = rng.integers(0, 2**40, size=off + n + int(rng.integers(0, 20)), dtype=np.int64)
        a = b[off : off + n].copy()
        if n and rng.random() < 0.8:  # a difference at an edge, or anywhere
            at = min(int(rng.choice(edges)) if rng.random() < 0.6 else int(rng.integers(0, n)),
                     n - 1)
            a[at] ^= 1 << int(rng.integers(0, 63))
        m = min(len(a), len(b) - off)
        diff = np.flatnonzero(a[:m] != b[off : off + m])
        want = int(diff[0]) if len(diff) else m
        view = memoryview(b).cast("B")
        assert KERNEL.common_prefix(a.tobytes(), view, off * 8) == want  # type: ignore[union-attr]


@NEEDS_KERNEL
def test_the_page_loops_refuse_outputs_too_small() -> None:
    with pytest.raises(ValueError, match="out holds 1 pages, 2 needed"):
        KERNEL.pages_of(np.arange(8, dtype=np.int64), 4, 8,  # type: ignore[union-attr]
                        np.empty(1, dtype=np.int64))
    with pytest.raises(ValueError, match="more needed"):
        KERNEL.page_slots([np.arange(3, dtype=np.int64)], 4,  # type: ignore[union-attr]
                          np.empty(8, dtype=np.int64))
    with pytest.raises(TypeError, match="takes exactly 3 arguments"):
        KERNEL.page_slots([], 4)  # type: ignore[union-attr]
