"""A policy that raises or returns garbage: every cache operation is atomic with respect to it.

Each operation that scores (insert, match_prefix, dec_lock_ref, evict's parent
re-offer and a volatile policy's re-score) must leave the tree, the sizes, the
pool and the eviction candidates exactly as they were when score() raises or
returns something that cannot be ordered, and the error names the policy and
the distribution that registered it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import torch
from helpers.rigs import Rig, cache_state

from radix_evict import (
    EvictionPolicy,
    KVPool,
    PolicyConfigError,
    PolicyError,
    PolicySpec,
    RadixCache,
    TreeNode,
    hookimpl,
    registry,
)
from radix_evict.testing.invariants import check_cache


class Armed(EvictionPolicy):
    """LRU until armed; then ``answer(node)`` decides (raise, or garbage) for chosen nodes."""

    name = "armed"
    hits: ClassVar[Callable[[TreeNode], bool]] = staticmethod(lambda node: True)
    answer: ClassVar[Callable[[TreeNode], Any] | None] = None

    def score(self, node: TreeNode) -> Any:
        answer = type(self).answer
        if answer is not None and type(self).hits(node):
            return answer(node)
        return float(node.last_access_time)


def boom(node: TreeNode) -> Any:
    raise ZeroDivisionError("score blew up")


@pytest.fixture
def armed() -> Iterator[type[Armed]]:
    Armed.answer = None
    Armed.hits = staticmethod(lambda node: True)
    yield Armed
    Armed.answer = None


def arm(answer: Callable[[TreeNode], Any], hits: Callable[[TreeNode], bool] | None = None) -> None:
    Armed.answer = answer
    if hits is not None:
        Armed.hits = staticmethod(hits)


def tree(armed: type[Armed], page: int = 1) -> Rig:
    rig = Rig(size=64 * page, page_size=page, policy=armed())
    rig.insert([1] * page + [2] * page + [3] * page + [4] * page)
    rig.insert([1] * page + [2] * page + [3] * page + [4] * page + [5] * page + [6] * page)
    rig.insert([7] * page + [8] * page)
    return rig


def slots(rig: Rig, n: int) -> torch.Tensor:
    s = rig.pool.alloc(n)
    assert s is not None
    return s


def assert_unchanged(rig: Rig, before: dict[str, Any], held: list[torch.Tensor]) -> None:
    assert cache_state(rig.cache) == before
    check_cache(rig.cache, held_by_callers=held)


# --------------------------------------------------------------------------- raising score()
def test_raise_in_evicts_parent_reoffer_changes_nothing(armed: type[Armed]) -> None:
    rig = tree(armed)
    before = cache_state(rig.cache)
    arm(boom, hits=lambda node: node.num_tokens == 4)  # only the parent [1, 2, 3, 4]
    with pytest.raises(PolicyError, match=r"policy 'armed'.*ZeroDivisionError: score blew up"):
        rig.cache.evict(2)  # takes [5, 6] (least recent); then its parent [1..4] is re-offered
    assert_unchanged(rig, before, [])
    Armed.answer = None
    assert rig.cache.evict(100) == 8  # nothing was lost: every token can still go
    check_cache(rig.cache)


def test_raise_in_insert_changes_nothing(armed: type[Armed]) -> None:
    rig = tree(armed)
    arm(boom)
    row = slots(rig, 3)
    before = cache_state(rig.cache)
    with pytest.raises(PolicyError, match="score blew up") as e:
        rig.cache.insert([9, 9, 9], row)
    assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert_unchanged(rig, before, [row])  # the caller still holds its 3 slots
    Armed.answer = None
    assert rig.cache.insert([9, 9, 9], row) == 0
    assert [9, 9, 9] in [x.key.tolist() for x in rig.cache.evictable_leaves()]
    check_cache(rig.cache)


@pytest.mark.parametrize("page", [1, 4])
@pytest.mark.parametrize("locked", [False, True])
@pytest.mark.parametrize("first", [[1, 2, 3, 9], [7, 9]], ids=["inner-node", "leaf"])
def test_raise_in_an_insert_that_splits_changes_nothing(
    armed: type[Armed], page: int, locked: bool, first: list[int]
) -> None:
    rig = tree(armed, page)
    if locked:  # a split copies the lock count into the new head: it must go with the head
        rig.cache.inc_lock_ref(rig.cache.match_prefix([7] * page + [8] * page).last_node)
    arm(boom)
    key = [t for t in first for _ in range(page)]
    row = slots(rig, len(key))
    before = cache_state(rig.cache)
    with pytest.raises(PolicyError):
        rig.cache.insert(key, row)
    assert_unchanged(rig, before, [row])


def test_raise_in_a_full_match_insert_changes_nothing(armed: type[Armed]) -> None:
    rig = tree(armed)
    arm(boom)
    row = slots(rig, 2)
    before = cache_state(rig.cache)
    with pytest.raises(PolicyError):
        rig.cache.insert([7, 8], row)  # all cached: the leaf [7, 8] is re-scored
    assert_unchanged(rig, before, [row])  # the duplicate slots were not freed


@pytest.mark.parametrize("split", [False, True])
def test_raise_in_match_prefix_changes_nothing(armed: type[Armed], split: bool) -> None:
    rig = tree(armed)
    before = cache_state(rig.cache)
    arm(boom)
    with pytest.raises(PolicyError):
        rig.cache.match_prefix([7] if split else [7, 8])  # split re-scores the tail [8]
    assert_unchanged(rig, before, [])


def test_raise_in_dec_lock_ref_changes_nothing(armed: type[Armed]) -> None:
    rig = tree(armed)
    node = rig.cache.match_prefix([7, 8]).last_node
    rig.cache.inc_lock_ref(node)
    before = cache_state(rig.cache)
    arm(boom)
    with pytest.raises(PolicyError):
        rig.cache.dec_lock_ref(node)
    assert_unchanged(rig, before, [])
    Armed.answer = None
    rig.cache.dec_lock_ref(node)
    check_cache(rig.cache)


class VolatileArmed(Armed):
    name = "volatile-armed"
    volatile_score: ClassVar[bool] = True


def test_raise_in_a_volatile_rescore_changes_nothing(armed: type[Armed]) -> None:
    rig = tree(VolatileArmed)  # type: ignore[arg-type]
    before = cache_state(rig.cache)
    arm(boom, hits=lambda node: node.num_tokens == 2 and int(node.key[0]) == 5)
    with pytest.raises(PolicyError):
        rig.cache.evict(1)
    assert_unchanged(rig, before, [])


def test_base_exceptions_are_not_wrapped_but_still_undone(armed: type[Armed]) -> None:
    rig = tree(armed)
    before = cache_state(rig.cache)

    def interrupt(node: TreeNode) -> Any:
        raise KeyboardInterrupt

    arm(interrupt, hits=lambda node: node.num_tokens == 4)
    with pytest.raises(KeyboardInterrupt):
        rig.cache.evict(2)
    assert_unchanged(rig, before, [])


# --------------------------------------------------------------------------- garbage scores
GARBAGE: list[tuple[str, Callable[[TreeNode], Any]]] = [
    ("None", lambda n: None),
    ("str", lambda n: "low"),
    ("tensor", lambda n: torch.tensor(1.0)),
    ("complex", lambda n: 1j),
    ("NaN", lambda n: math.nan),
    ("NaN in a tuple", lambda n: (math.nan,)),
    ("None in a tuple", lambda n: (None,)),
    ("empty tuple", lambda n: ()),
    ("list", lambda n: [1]),
]


@pytest.mark.parametrize("answer", [g[1] for g in GARBAGE], ids=[g[0] for g in GARBAGE])
def test_garbage_scores_are_refused_naming_the_policy(
    armed: type[Armed], answer: Callable[[TreeNode], Any]
) -> None:
    rig = tree(armed)
    arm(answer)
    row = slots(rig, 2)
    before = cache_state(rig.cache)
    with pytest.raises(PolicyError, match=r"policy 'armed'.*score\(\) returned"):
        rig.cache.insert([9, 9], row)
    assert_unchanged(rig, before, [row])
    with pytest.raises(PolicyError, match="score"):
        rig.cache.match_prefix([7, 8])
    arm(answer, hits=lambda node: node.num_tokens == 4)
    with pytest.raises(PolicyError, match="score"):
        rig.cache.evict(2)
    assert_unchanged(rig, before, [row])


def test_a_score_of_another_shape_is_refused(armed: type[Armed]) -> None:
    rig = tree(armed)  # every score so far was a number
    before = cache_state(rig.cache)
    arm(lambda n: (1, 2))
    with pytest.raises(PolicyError, match="after returning a number"):
        rig.cache.match_prefix([7, 8])
    assert_unchanged(rig, before, [])


class Tuples(EvictionPolicy):
    name = "tuples"
    width: ClassVar[int] = 2

    def score(self, node: TreeNode) -> Any:
        return (0,) * type(self).width + (node.last_access_time,)


def test_tuples_of_varying_length_are_refused() -> None:
    Tuples.width = 1
    rig = Rig(policy=Tuples())
    rig.insert([1, 2])
    before = cache_state(rig.cache)
    Tuples.width = 2
    with pytest.raises(PolicyError, match="after returning tuples of 2 items"):
        rig.cache.match_prefix([1, 2])
    assert_unchanged(rig, before, [])


@pytest.mark.parametrize("value", [True, 3, 2.5, (1, 2.5), (False, 7)], ids=repr)
def test_real_numbers_and_bools_are_scores(value: Any) -> None:
    class Fixed(EvictionPolicy):
        name = "fixed"

        def score(self, node: TreeNode) -> Any:
            return value

    rig = Rig(policy=Fixed())
    rig.insert([1, 2])
    rig.insert([3, 4])
    assert rig.cache.evict(1) == 2
    check_cache(rig.cache)


# --------------------------------------------------------------------------- who to blame
class Boom(EvictionPolicy):
    name = "boom"

    def score(self, node: TreeNode) -> float:
        raise ZeroDivisionError("score blew up")


class BoomPlugin:
    @hookimpl
    def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name="boom", policy=Boom, summary="raises"))


def test_the_error_names_the_policy_and_its_distribution() -> None:
    registry.add_plugin(BoomPlugin(), name="boom-ep", distribution="acme-policies", version="1.2")
    try:
        cache = RadixCache(KVPool(size=16, device="cpu"), policy="boom")
        row = cache.pool.alloc(2)
        assert row is not None
        with pytest.raises(PolicyError) as e:
            cache.insert([1, 2], row)
    finally:
        registry.remove_plugin("boom-ep")
    text = str(e.value)
    assert "policy 'boom'" in text and "acme-policies 1.2" in text and "boom-ep" in text
    assert (e.value.policy, e.value.distribution) == ("boom", "acme-policies")


def test_a_policy_object_without_a_name_is_named_by_its_class() -> None:
    class Anonymous(EvictionPolicy):
        def score(self, node: TreeNode) -> Any:
            return None

    rig = Rig(policy=Anonymous())
    with pytest.raises(PolicyError, match=r"^policy .*Anonymous \(no name\): score\(\) returned"):
        rig.insert([1, 2])
    assert rig.cache.total_size() == 0  # refused: nothing cached


# --------------------------------------------------------------------------- bad policy arguments
@pytest.mark.parametrize(
    "kwargs",
    [{"policy": 123}, {"policy": None}, {"policy_config": [1]}, {"policy_config": 5}],
    ids=["policy=123", "policy=None", "policy_config=[1]", "policy_config=5"],
)
def test_bad_policy_arguments_are_policy_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(PolicyConfigError):
        RadixCache(KVPool(size=16, device="cpu"), **kwargs)
