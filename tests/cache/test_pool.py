"""KVPool: pages, double-free detection, and errors that leave the pool as it was."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from radix_evict import KVPool


def test_slots_start_free_and_come_back() -> None:
    pool = KVPool(size=10, device="cpu")
    assert pool.available_size() == 10 and pool.device == torch.device("cpu")
    a = pool.alloc(4)
    assert a is not None and a.dtype == torch.int64 and len(set(a.tolist())) == 4
    assert pool.available_size() == 6
    assert pool.alloc(7) is None and pool.available_size() == 6  # all or nothing
    pool.free(a)
    assert pool.available_size() == 10
    assert len(pool.alloc(0)) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("page", [4, 16])
def test_pages_are_whole_and_aligned(page: int) -> None:
    pool = KVPool(size=page * 8, page_size=page, device="cpu")
    slots = pool.alloc(page * 3)
    assert slots is not None
    rows = slots.view(-1, page)
    assert bool((rows[:, 0] % page == 0).all())
    assert bool((rows == rows[:, :1] + torch.arange(page)).all())
    with pytest.raises(ValueError, match="multiple of page_size"):
        pool.alloc(page + 1)
    with pytest.raises(ValueError, match="whole pages"):
        pool.free(slots[:-1])
    with pytest.raises(ValueError, match="aligned pages"):
        pool.free(slots[1 : page + 1])
    assert pool.available_size() == page * 5
    pool.free(slots)
    assert pool.available_size() == page * 8


def test_double_free_raises_and_frees_nothing() -> None:
    pool = KVPool(size=8, device="cpu")
    a = pool.alloc(3)
    assert a is not None
    pool.free(a[:1])
    with pytest.raises(ValueError, match=f"slot {int(a[0])} is free in the pool"):
        pool.free(a)  # a[1:] are still allocated: none of them may be freed by this call
    assert pool.available_size() == 6
    with pytest.raises(ValueError, match="listed more than once"):
        pool.free(torch.cat([a[1:2], a[1:2]]))
    assert pool.available_size() == 6
    pool.free(a[1:])
    assert pool.available_size() == 8


@pytest.mark.parametrize(
    ("bad", "exc", "message"),
    [
        (torch.tensor([99]), ValueError, "outside the pool"),
        (torch.tensor([-1]), ValueError, "outside the pool"),
        (torch.tensor([1.0]), TypeError, "integer KV slots"),
        (torch.empty(1, dtype=torch.int64, device="meta"), ValueError, "meta"),
        (np.array([1]), TypeError, "torch tensor"),
        (torch.zeros(1, 1, dtype=torch.int64), ValueError, "1-D"),
    ],
)
def test_free_rejects_bad_slots(bad: object, exc: type[Exception], message: str) -> None:
    pool = KVPool(size=8, device="cpu")
    pool.alloc(4)
    with pytest.raises(exc, match=message):
        pool.free(bad)  # type: ignore[arg-type]
    assert pool.available_size() == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": 0}, "size"),
        ({"size": 10, "page_size": 4}, "whole number of pages"),
        ({"size": 8, "page_size": 0}, "page_size"),
        ({"size": 8, "layers": -1}, "layers"),
    ],
)
def test_bad_pool_shapes(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KVPool(device="cpu", **kwargs)


def test_kv_buffers_per_layer() -> None:
    pool = KVPool(size=16, device="cpu", layers=2, heads=3, head_dim=4, dtype=torch.float32)
    assert len(pool.k_buffer) == len(pool.v_buffer) == 2
    assert pool.k_buffer[0].shape == (16, 3, 4) and pool.v_buffer[1].dtype == torch.float32
    assert KVPool(size=4, device="cpu").k_buffer == []


def test_alloc_rejects_bad_counts() -> None:
    pool = KVPool(size=8, device="cpu")
    with pytest.raises(ValueError, match="n must be >= 0"):
        pool.alloc(-1)
    for bad in (1.5, True, "4"):
        with pytest.raises(TypeError, match="n must be an integer"):
            pool.alloc(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("page", [1, 4, 16])
def test_page_slots_spell_pages_out_in_order(page: int) -> None:
    pool = KVPool(size=page * 8, page_size=page, device="cpu")
    pages = np.array([5, 0, 7, 2])
    expected = np.concatenate([np.arange(p * page, (p + 1) * page) for p in pages])
    out = pool.page_slots(pages)
    assert out.tolist() == expected.tolist()
    out[:] = -1  # a new array: the pool's own state is untouched
    assert pool.page_slots(pages).tolist() == expected.tolist()


@pytest.mark.parametrize("page", [1, 4])
def test_single_page_free_detects_double_free(page: int) -> None:
    pool = KVPool(size=page * 4, page_size=page, device="cpu")
    a = pool.alloc(page * 2)
    assert a is not None
    pool.free(a[:page])
    named = f"slot {int(a[0])} is" if page == 1 else f"slots {int(a[0])}..{int(a[page - 1])} are"
    with pytest.raises(ValueError, match=f"{named} free in the pool"):
        pool.free(a[:page])
    never = pool.alloc(0)
    assert never is not None and len(never) == 0
    with pytest.raises(ValueError, match="never handed out"):
        pool.free(torch.arange(page * 3, page * 4))  # a page nobody was handed
    assert pool.available_size() == page * 3
    pool.free(a[page:])
    assert pool.available_size() == page * 4
    assert sorted(pool.alloc(page * 4).tolist()) == list(range(page * 4))  # type: ignore[union-attr]


def test_counts_accept_numpy_integers_and_reject_bools() -> None:
    pool = KVPool(size=np.int64(8), page_size=np.int32(2), device="cpu")
    assert pool.size == 8 and type(pool.size) is int
    slots = pool.alloc(np.int64(4))
    assert slots is not None and len(slots) == 4
    with pytest.raises(TypeError, match="size must be an integer"):
        KVPool(size=True, device="cpu")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
@pytest.mark.parametrize("page", [1, 4])
def test_slots_of_another_integer_width_are_taken_as_int64(dtype: torch.dtype, page: int) -> None:
    """insert and free take integer slots of any width (one conversion for both)."""
    from radix_evict import RadixCache
    from radix_evict.testing.invariants import check_cache

    pool = KVPool(size=64, page_size=page, device="cpu")
    cache = RadixCache(pool, page_size=page)
    slots = pool.alloc(8 * page)
    assert slots is not None
    keep, spare = slots[: 4 * page], slots[4 * page :]
    assert cache.insert(list(range(4 * page)), keep.to(dtype)) == 0
    assert torch.equal(cache.match_prefix(list(range(4 * page))).indices, keep)
    pool.free(spare.to(dtype))
    assert pool.available_size() == 64 - 4 * page
    check_cache(cache)
    with pytest.raises(ValueError, match="owned by a cached node"):  # still checked as slots
        pool.free(keep.to(dtype))
    assert pool.available_size() == 64 - 4 * page
