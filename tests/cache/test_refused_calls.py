"""Bad input gets a clear error naming what is wrong, and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from helpers.rigs import Rig, cache_state

from radix_evict import KVPool, RadixCache
from radix_evict.testing.invariants import check_cache


@pytest.fixture
def busy() -> Rig:
    rig = Rig(size=64)
    rig.insert([1, 2, 3, 4])
    rig.insert([1, 2, 3, 4, 5, 6])
    rig.insert([7, 8, 9])
    node = rig.cache.match_prefix([7, 8, 9]).last_node
    rig.cache.inc_lock_ref(node)
    rig.unlocked = rig.cache.match_prefix([1, 2, 3, 4]).last_node  # type: ignore[attr-defined]
    rig.caller_slots = []  # type: ignore[attr-defined]
    return rig


def fresh(rig: Rig, n: int) -> torch.Tensor:
    """Slots a caller allocated for its arguments: still the caller's after the error."""
    slots = rig.pool.alloc(n)
    assert slots is not None
    rig.caller_slots.append(slots)  # type: ignore[attr-defined]
    return slots


CASES: list[tuple[str, Callable[[Rig], Any], type[Exception], str]] = [
    ("empty key", lambda r: r.cache.insert([], fresh(r, 0)), ValueError, "empty key"),
    (
        "length mismatch",
        lambda r: r.cache.insert([1, 2, 3], fresh(r, 2)),
        ValueError,
        "differ in length",
    ),
    ("float tokens", lambda r: r.cache.insert([1.0, 2.5], fresh(r, 2)), TypeError, "integer token"),
    ("bool tokens", lambda r: r.cache.match_prefix([True, False]), TypeError, "integer token"),
    ("string tokens", lambda r: r.cache.match_prefix("abc"), TypeError, "integer token"),
    ("float tensor", lambda r: r.cache.match_prefix(torch.tensor([1.0, 2.0])), TypeError, "float"),
    (
        "2-D tokens",
        lambda r: r.cache.match_prefix(np.zeros((2, 2), dtype=np.int64)),
        ValueError,
        "1-D",
    ),
    ("huge token", lambda r: r.cache.match_prefix([2**70]), TypeError, "integer token"),
    (
        "float slots",
        lambda r: r.cache.insert([1, 2], torch.tensor([1.0, 2.0])),
        TypeError,
        "integer",
    ),
    (
        "slots on another device",
        lambda r: r.cache.insert([1, 2], torch.empty(2, dtype=torch.int64, device="meta")),
        ValueError,
        "meta",
    ),
    ("list slots", lambda r: r.cache.insert([1, 2], [5, 6]), TypeError, "torch tensor"),
    # prev_prefix_len covering the whole key: the slots are checked, though none is read.
    (
        "length mismatch, prefix covered",
        lambda r: r.cache.insert([1, 2, 3], fresh(r, 2), prev_prefix_len=3),
        ValueError,
        "differ in length",
    ),
    (
        "float slots, prefix covered",
        lambda r: r.cache.insert([1, 2], torch.tensor([1.0, 2.0]), prev_prefix_len=2),
        TypeError,
        "integer",
    ),
    (
        "list slots, prefix covered",
        lambda r: r.cache.insert([1, 2], [5, 6], prev_prefix_len=2),
        TypeError,
        "torch tensor",
    ),
    (
        "2-D slots",
        lambda r: r.cache.insert([1, 2], fresh(r, 2).view(1, 2)),
        ValueError,
        "1-D",
    ),
    (
        "slots that need grad",
        lambda r: r.cache.insert([1, 2], torch.zeros(2, requires_grad=True)),
        TypeError,
        "integer",
    ),
    (
        "negative prev_prefix_len",
        lambda r: r.cache.insert([1, 2], fresh(r, 2), prev_prefix_len=-1),
        ValueError,
        "prev_prefix_len",
    ),
    (
        "prev_prefix_len too long",
        lambda r: r.cache.insert([1, 2], fresh(r, 2), prev_prefix_len=3),
        ValueError,
        "prev_prefix_len",
    ),
    (
        "float priority",
        lambda r: r.cache.insert([1, 2], fresh(r, 2), priority=1.5),
        TypeError,
        "priority",
    ),
    ("evict(0)", lambda r: r.cache.evict(0), ValueError, "num_tokens"),
    ("evict(-3)", lambda r: r.cache.evict(-3), ValueError, "num_tokens"),
    ("evict(1.5)", lambda r: r.cache.evict(1.5), TypeError, "num_tokens"),
    ("evict(True)", lambda r: r.cache.evict(True), TypeError, "num_tokens"),
    ("double unlock", lambda r: r.cache.dec_lock_ref(r.unlocked), ValueError, "not locked"),
    ("lock a non-node", lambda r: r.cache.inc_lock_ref("node"), TypeError, "TreeNode"),
    ("reset while locked", lambda r: r.cache.reset(), RuntimeError, "locked"),
]


@pytest.mark.parametrize(("what", "call", "exc", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_and_changes_nothing(
    busy: Rig, what: str, call: Callable[[Rig], Any], exc: type[Exception], message: str
) -> None:
    before = cache_state(busy.cache)
    with pytest.raises(exc, match=message):
        call(busy)
    after = cache_state(busy.cache)
    taken = sum(len(s) for s in busy.caller_slots)  # type: ignore[attr-defined]
    assert after.pop("available") == before.pop("available") - taken, f"{what}: slots moved"
    del after["owners"], before["owners"]  # the slots the call itself allocated
    assert after == before, f"{what}: the cache changed"
    check_cache(busy.cache, held_by_callers=busy.caller_slots)  # type: ignore[attr-defined]


def test_double_unlock_of_a_foreign_node_rolls_back() -> None:
    a, b = Rig(), Rig()
    a.insert([1, 2, 3])
    node = a.cache.match_prefix([1, 2, 3]).last_node
    a.cache.inc_lock_ref(node)
    with pytest.raises(ValueError, match="not in this cache"):
        b.cache.dec_lock_ref(node)
    with pytest.raises(ValueError, match="not in this cache"):
        b.cache.inc_lock_ref(node)
    assert node.lock_ref == 1
    a.cache.dec_lock_ref(node)
    check_cache(a.cache)
    check_cache(b.cache)


def test_evicted_node_cannot_be_locked() -> None:
    rig = Rig()
    rig.insert([1, 2, 3])
    node = rig.cache.match_prefix([1, 2, 3]).last_node
    rig.cache.evict(3)
    with pytest.raises(ValueError, match="not in this cache"):
        rig.cache.inc_lock_ref(node)
    check_cache(rig.cache)


def test_page_size_must_match_the_pool() -> None:
    pool = KVPool(size=64, page_size=4, device="cpu")
    with pytest.raises(ValueError, match="page_size 8 differs"):
        RadixCache(pool, page_size=8)


def test_pool_must_be_an_allocator() -> None:
    with pytest.raises(TypeError, match="alloc"):
        RadixCache(object())  # type: ignore[arg-type]


def test_insert_rejects_slots_that_are_not_whole_pages() -> None:
    rig = Rig(size=64, page_size=4)
    slots = rig.pool.alloc(8)
    assert slots is not None
    free_before = rig.pool.available_size()
    for bad in (slots.roll(1), torch.cat([slots[2:6], slots[:2], slots[6:]])):
        with pytest.raises(ValueError, match="whole, aligned pages of 4"):
            rig.cache.insert(list(range(8)), bad)
    assert rig.cache.total_size() == 0 and rig.pool.available_size() == free_before
    assert rig.cache.insert(list(range(8)), slots) == 0
    check_cache(rig.cache)


def test_insert_checks_the_pages_it_takes_not_the_callers_cached_prefix() -> None:
    rig = Rig(size=64, page_size=4)
    first = rig.pool.alloc(8)
    assert first is not None
    rig.cache.insert(list(range(8)), first)
    more = rig.pool.alloc(4)
    assert more is not None
    # The caller's cached prefix (indices[:8]) is never read: garbage there is ignored...
    row = torch.cat([torch.full((8,), -7, dtype=torch.int64), more])
    assert rig.cache.insert(list(range(12)), row, prev_prefix_len=8) == 8
    check_cache(rig.cache)
    # ...but the pages the cache takes or frees are checked before anything changes.
    other = rig.pool.alloc(4)
    assert other is not None
    free_before = rig.pool.available_size()
    with pytest.raises(ValueError, match="whole, aligned pages of 4"):
        rig.cache.insert(list(range(16)), torch.cat([first, more, other.roll(1)]), 12)
    assert rig.cache.total_size() == 12 and rig.pool.available_size() == free_before


def test_insert_checks_a_prefix_the_caller_claimed_but_the_tree_lacks() -> None:
    rig = Rig(size=64, page_size=4)
    slots = rig.pool.alloc(8)
    assert slots is not None
    bad = torch.cat([slots[:4].roll(1), slots[4:]])
    # prev_prefix_len says 4 tokens are cached, but the tree is empty: the new leaf would
    # take indices[:4] as well, so they get the page check too.
    with pytest.raises(ValueError, match="whole, aligned pages of 4"):
        rig.cache.insert(list(range(8)), bad, prev_prefix_len=4)
    assert rig.cache.total_size() == 0
    check_cache(rig.cache, held_by_callers=[slots])
