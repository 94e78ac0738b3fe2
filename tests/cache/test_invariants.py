"""The invariant checker catches what it promises to (it guards every other test)."""

from __future__ import annotations

import pytest
import torch
from helpers.rigs import Rig

from radix_evict.testing.invariants import InvariantError, check_cache


def built() -> Rig:
    rig = Rig(size=32)
    rig.insert([1, 2, 3, 4])
    rig.insert([1, 2, 9])
    return rig


def test_a_consistent_cache_passes() -> None:
    check_cache(built().cache)


def test_a_tree_slot_the_pool_counts_as_free_fails() -> None:
    rig = built()
    slot = rig.cache.match_prefix([1, 2, 3, 4]).indices[-1:]
    rig.pool.release_pages([slot.numpy()])  # the cache's own release path, behind its back
    spare = rig.pool.alloc(1)  # keep the totals equal, so only ownership can tell
    assert spare is not None
    with pytest.raises(InvariantError, match=r"held but the pool counts it as free|held twice"):
        check_cache(rig.cache, held_by_callers=[spare])


def test_an_owner_table_that_disagrees_fails() -> None:
    rig = built()
    slots = rig.cache.match_prefix([1, 2, 3, 4]).indices
    rig.pool.disown_pages(slots.numpy())  # the tree still holds them; the pool says a caller
    with pytest.raises(InvariantError, match="held by the tree but the pool's owner table"):
        check_cache(rig.cache)
    rig.pool.adopt_pages(slots.numpy())
    check_cache(rig.cache)
    spare = rig.pool.alloc(2)
    assert spare is not None
    rig.pool.adopt_pages(spare.numpy())  # a caller's slots the pool now calls the tree's
    with pytest.raises(InvariantError, match="owner table"):
        check_cache(rig.cache, held_by_callers=[spare])


def test_a_slot_held_twice_fails() -> None:
    rig = built()
    slot = rig.cache.match_prefix([1, 2]).indices[:1]
    with pytest.raises(InvariantError, match="held twice"):
        check_cache(rig.cache, held_by_callers=[slot])


def test_leaked_slots_fail() -> None:
    rig = built()
    leaked = rig.pool.alloc(2)
    assert leaked is not None
    with pytest.raises(InvariantError, match="slot accounting"):
        check_cache(rig.cache)
    check_cache(rig.cache, held_by_callers=[leaked])


def test_wrong_sizes_fail() -> None:
    rig = built()
    rig.cache._evictable += 1
    with pytest.raises(InvariantError, match="sizes"):
        check_cache(rig.cache)


def test_broken_lock_counts_fail() -> None:
    rig = built()
    leaf = rig.cache.match_prefix([1, 2, 3, 4]).last_node
    leaf.lock_ref = 1  # without the ancestors, and without moving sizes
    with pytest.raises(InvariantError, match=r"lock_ref|sizes"):
        check_cache(rig.cache)
    assert torch.is_tensor(rig.cache.node_slots(leaf))
