"""Slot ownership: no KV slot handed to two owners, whatever a caller passes.

Each misuse below is refused with an error naming the argument and the slots,
and changes nothing: the tree, the sizes and the pool's owner table are as
they were, and afterwards ``alloc`` never hands out a slot someone holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from helpers.rigs import Rig, cache_state

from radix_evict import KVPool, RadixCache
from radix_evict.cache.ownership import CACHED, CALLER, FREE
from radix_evict.testing.invariants import check_cache


def refused(rig: Rig, call: Callable[[], Any], match: str, held: list[torch.Tensor]) -> None:
    """``call`` raises ValueError matching ``match`` and changes nothing."""
    before = cache_state(rig.cache)
    with pytest.raises(ValueError, match=match):
        call()
    assert cache_state(rig.cache) == before, "a refused call changed the cache or the pool"
    check_cache(rig.cache, held_by_callers=held)


def drain_and_check(rig: Rig, held: list[torch.Tensor]) -> None:
    """Evict everything, take every free slot: none of them may be one a caller holds."""
    total = rig.cache.total_size() - rig.cache.protected_size()
    if total:
        rig.cache.evict(total)
    rest = rig.pool.alloc(rig.pool.available_size())
    assert rest is not None
    mine = set(torch.cat(held).tolist()) if held else set()
    assert not mine & set(rest.tolist()), "alloc handed out a slot a caller still holds"
    check_cache(rig.cache, held_by_callers=[*held, rest])


def cached(rig: Rig, tokens: list[int]) -> torch.Tensor:
    rig.insert(tokens)
    return rig.cache.match_prefix(tokens).indices


def test_insert_refuses_slots_already_freed() -> None:
    rig = Rig(size=16)
    slots = rig.pool.alloc(4)
    assert slots is not None
    rig.pool.free(slots)
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4], slots),
        r"insert: indices\[0:4\]: slots 0, 1, 2, 3 are free in the pool",
        [],
    )
    drain_and_check(rig, [])


def test_insert_refuses_another_pools_slots() -> None:
    rig = Rig(size=16)
    theirs = KVPool(size=16, device="cpu").alloc(4)
    assert theirs is not None
    refused(rig, lambda: rig.cache.insert([1, 2, 3, 4], theirs), "another pool's", [])
    drain_and_check(rig, [])


def test_insert_refuses_slots_outside_the_pool_and_evict_still_works() -> None:
    rig = Rig(size=16)
    cached(rig, [9, 9])
    outside = torch.arange(100, 104)
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4], outside),
        r"insert: indices\[0:4\]: slots 100, 101, 102, 103 outside the pool \(0\.\.15\)",
        [],
    )
    refused(rig, lambda: rig.cache.insert([1], torch.tensor([-1])), r"slot -1 outside", [])
    assert rig.cache.evict(16) == 2
    drain_and_check(rig, [])


def test_insert_refuses_a_slot_twice_in_one_row() -> None:
    rig = Rig(size=16)
    slots = rig.pool.alloc(4)
    assert slots is not None
    row = torch.cat([slots[:3], slots[1:2]])
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4], row),
        f"slot {int(slots[1])} is listed more than once",
        [slots],
    )
    drain_and_check(rig, [slots])


def test_insert_refuses_slots_a_cached_node_owns() -> None:
    rig = Rig(size=16)
    theirs = cached(rig, [1, 2, 3, 4])
    refused(
        rig,
        lambda: rig.cache.insert([5, 6, 7, 8], theirs),
        "slots 0, 1, 2, 3 are owned by a cached node",
        [],
    )
    drain_and_check(rig, [])


def test_insert_refuses_to_free_the_trees_slots_as_duplicates() -> None:
    """prev_prefix_len=0 after a locked match: the row's head is the tree's, not duplicates."""
    rig = Rig(size=16)
    cached(rig, [1, 2, 3, 4])
    m = rig.cache.match_prefix([1, 2, 3, 4, 5, 6])
    rig.cache.inc_lock_ref(m.last_node)
    new = rig.pool.alloc(2)
    assert new is not None
    row = torch.cat([m.indices, new])
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4, 5, 6], row, prev_prefix_len=0),
        r"insert: indices\[0:6\]: slots 0, 1, 2, 3 are owned by a cached node",
        [new],
    )
    assert rig.cache.insert([1, 2, 3, 4, 5, 6], row, prev_prefix_len=4) == 4  # the right call
    rig.cache.dec_lock_ref(m.last_node)
    drain_and_check(rig, [])


def test_a_stale_prefix_is_refused_before_the_walk_changes_anything() -> None:
    """prev_prefix_len claims a prefix that was evicted meanwhile (it was not locked).

    The new leaf would take ``indices[matched:prev]`` too, slots that are no
    longer the caller's: refused, and the node the walk would split is intact.
    """
    rig = Rig(size=16)
    rig.insert([1, 2, 3, 4])
    m = rig.cache.match_prefix([1, 2, 3, 4, 5])  # not locked
    assert rig.cache.evict(4) == 4
    rig.insert([1, 2, 7, 7])  # reuses the evicted slots
    new = rig.pool.alloc(1)
    assert new is not None
    row = torch.cat([m.indices, new])
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4, 5], row, prev_prefix_len=4, priority=3),
        r"insert: indices\[2:5\]: slots .* are owned by a cached node",
        [new],
    )
    assert rig.leaf_tokens() == [[1, 2, 7, 7]]  # not split at [1, 2]
    rig.pool.free(new)
    drain_and_check(rig, [])


def test_insert_checks_every_slot_of_every_page() -> None:
    rig = Rig(size=16, page_size=4)
    slots = rig.pool.alloc(8)
    assert slots is not None and slots.tolist() == list(range(8))
    scrambled = torch.tensor([0, 5, 6, 3, 4, 1, 2, 7])  # first and last of each page fit
    refused(
        rig,
        lambda: rig.cache.insert(list(range(8)), scrambled),
        r"insert: indices\[0:8\]: slots are not whole, aligned pages of 4",
        [slots],
    )
    assert rig.cache.insert(list(range(8)), slots) == 0
    assert rig.cache.match_prefix(list(range(8))).indices.tolist() == list(range(8))
    drain_and_check(rig, [])


def test_pages_are_refused_whole_and_named_by_page() -> None:
    rig = Rig(size=16, page_size=4)
    first = cached(rig, list(range(4)))
    free_page = torch.arange(12, 16)
    refused(
        rig,
        lambda: rig.cache.insert([7] * 8, torch.cat([first, free_page])),
        r"slots 12\.\.15 are free in the pool .*; slots 0\.\.3 are owned by a cached node",
        [],
    )
    drain_and_check(rig, [])


def test_node_slots_of_an_evicted_node_are_empty() -> None:
    rig = Rig(size=16)
    cached(rig, [1, 2, 3])
    node = rig.cache.match_prefix([1, 2, 3]).last_node
    assert rig.cache.node_slots(node).tolist() == [0, 1, 2]
    rig.cache.evict(3)
    assert rig.cache.node_slots(node).tolist() == []
    again = rig.pool.alloc(3)  # the old slots now belong to someone else
    assert again is not None and sorted(again.tolist()) == [0, 1, 2]


def test_node_slots_after_reset_are_empty() -> None:
    rig = Rig(size=16)
    cached(rig, [1, 2, 3])
    node = rig.cache.match_prefix([1, 2, 3]).last_node
    rig.cache.reset()
    assert rig.cache.node_slots(node).tolist() == []
    assert rig.pool.available_size() == 16
    check_cache(rig.cache)


def test_free_refuses_the_trees_slots() -> None:
    rig = Rig(size=16)
    theirs = cached(rig, [1, 2, 3, 4])
    refused(
        rig,
        lambda: rig.pool.free(theirs),
        r"KVPool.free: indices: slots 0, 1, 2, 3 are owned by a cached node",
        [],
    )
    refused(rig, lambda: rig.pool.free(theirs[:1]), "slot 0 is owned by a cached node", [])
    drain_and_check(rig, [])


def test_free_refuses_a_mix_and_frees_none_of_it() -> None:
    rig = Rig(size=16)
    theirs = cached(rig, [1, 2])
    mine = rig.pool.alloc(2)
    assert mine is not None
    refused(rig, lambda: rig.pool.free(torch.cat([mine, theirs])), "owned by a cached node", [mine])
    rig.pool.free(mine)
    drain_and_check(rig, [])


def test_a_refused_slot_stays_the_callers_to_use() -> None:
    """After a refusal the caller still holds its slots and may insert them correctly."""
    rig = Rig(size=16)
    mine = rig.pool.alloc(4)
    assert mine is not None
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4], mine.flip(0)[:2].repeat(2)),
        "more than once",
        [mine],
    )
    assert rig.cache.insert([1, 2, 3, 4], mine) == 0
    assert (rig.pool.slot_owners()[mine.numpy()] == CACHED).all()
    drain_and_check(rig, [])


def test_owner_table_follows_every_move() -> None:
    rig = Rig(size=8)
    owners = rig.pool.slot_owners
    assert (owners() == FREE).all()
    slots = rig.pool.alloc(4)
    assert slots is not None
    assert (owners()[slots.numpy()] == CALLER).all()
    rig.cache.insert([1, 2], slots[:2])
    assert owners()[slots.numpy()].tolist() == [CACHED, CACHED, CALLER, CALLER]
    rig.cache.insert([1, 2, 3, 4], torch.cat([torch.tensor([5, 5]), slots[2:]]), prev_prefix_len=2)
    assert (owners()[slots.numpy()] == CACHED).all()
    rig.cache.evict(2)
    assert owners()[slots.numpy()].tolist() == [CACHED, CACHED, FREE, FREE]


def test_duplicates_freed_by_insert_must_be_the_callers() -> None:
    """The KV insert frees as a duplicate must be the caller's: freed slots there are refused."""
    rig = Rig(size=16)
    cached(rig, [1, 2, 3, 4])
    stale = rig.pool.alloc(4)
    assert stale is not None
    rig.pool.free(stale)  # freed, but passed as the duplicate copy of [1, 2, 3, 4]
    refused(rig, lambda: rig.cache.insert([1, 2, 3, 4], stale), "free in the pool", [])
    drain_and_check(rig, [])


class ListAllocator:
    """A foreign allocator with no owner table (what an engine might pass)."""

    page_size = 2
    device = torch.device("cpu")

    def __init__(self) -> None:
        self.free_slots = list(range(16))
        self.freed: list[int] = []

    def alloc(self, n: int) -> torch.Tensor | None:
        if n > len(self.free_slots):
            return None
        out, self.free_slots = self.free_slots[:n], self.free_slots[n:]
        return torch.tensor(out, dtype=torch.int64)

    def free(self, indices: torch.Tensor) -> None:
        self.freed += indices.tolist()
        self.free_slots += indices.tolist()

    def available_size(self) -> int:
        return len(self.free_slots)


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ([0, 1, 0, 1], "slot 0 is listed more than once"),
        ([-2, -1, 2, 3], "slot -2 is negative"),
        ([1, 2, 4, 5], "not whole, aligned pages of 2"),
        ([0, 1, 3, 2], "not whole, aligned pages of 2"),
    ],
)
def test_a_foreign_allocator_gets_the_checks_that_need_no_table(row: list[int], match: str) -> None:
    alloc = ListAllocator()
    cache = RadixCache(alloc)
    with pytest.raises(ValueError, match=match):
        cache.insert([1, 2, 3, 4], torch.tensor(row))
    assert cache.total_size() == 0 and alloc.freed == []


def test_a_foreign_allocator_sees_every_slot_the_cache_lets_go() -> None:
    alloc = ListAllocator()
    cache = RadixCache(alloc)
    a = alloc.alloc(4)
    b = alloc.alloc(6)
    assert a is not None and b is not None
    cache.insert([1, 2, 3, 4], a)
    assert cache.insert([1, 2, 3, 4, 5, 6], b) == 4
    assert sorted(alloc.freed) == sorted(b[:4].tolist())  # the duplicates
    cache.evict(6)
    assert sorted(alloc.freed) == sorted(b.tolist() + a.tolist())


def test_a_kvpool_wrapping_free_still_gets_the_trees_slots() -> None:
    """A subclass's ``free`` sees evicted slots, and its super().free accepts them."""
    seen: list[int] = []

    class Counting(KVPool):
        def free(self, indices: torch.Tensor) -> None:
            seen.extend(indices.tolist())
            super().free(indices)

    pool = Counting(size=8, device="cpu")
    cache = RadixCache(pool)
    slots = pool.alloc(4)
    assert slots is not None
    cache.insert([1, 2, 3, 4], slots)
    with pytest.raises(ValueError, match="owned by a cached node"):
        pool.free(slots)  # a caller still may not free them
    seen.clear()
    assert cache.evict(4) == 4
    assert sorted(seen) == slots.tolist() and pool.available_size() == 8
    assert (pool.slot_owners() == FREE).all()


def test_a_callers_pages_stay_its_own_after_the_free_list_reuses_their_positions() -> None:
    """Pages keep the position they were handed out from; a later free can reuse it."""
    rig = Rig(size=16)
    first = rig.pool.alloc(4)
    mine = rig.pool.alloc(4)
    assert first is not None and mine is not None
    rig.pool.free(first)  # pushed where ``mine`` came from: mine's positions now hold first
    assert (rig.pool.slot_owners()[mine.numpy()] == CALLER).all()
    assert (rig.pool.slot_owners()[first.numpy()] == FREE).all()
    refused(rig, lambda: rig.pool.free(first), "free in the pool", [mine])
    assert rig.cache.insert([1, 2, 3, 4], mine) == 0
    again = rig.pool.alloc(4)
    assert again is not None and sorted(again.tolist()) == sorted(first.tolist())
    refused(rig, lambda: rig.cache.insert([5, 6, 7, 8], mine), "owned by a cached node", [again])
    assert rig.cache.insert([5, 6, 7, 8], again) == 0
    drain_and_check(rig, [])


def test_a_row_from_several_allocations_is_accepted_and_checked() -> None:
    rig = Rig(size=16)
    parts = [rig.pool.alloc(1) for _ in range(3)]
    rig.pool.free(rig.pool.alloc(2))  # interleaved traffic: the row's tags are not consecutive
    parts.append(rig.pool.alloc(1))
    assert all(p is not None for p in parts)
    row = torch.cat(parts)  # type: ignore[arg-type]
    refused(
        rig,
        lambda: rig.cache.insert([1, 2, 3, 4, 5], torch.cat([row, row[1:2]])),
        "more than once",
        [row],
    )
    assert rig.cache.insert([1, 2, 3, 4], row) == 0
    drain_and_check(rig, [])
