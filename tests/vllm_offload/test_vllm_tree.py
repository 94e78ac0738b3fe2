"""ChunkTree on its own (no vLLM): leaves only, exactly n or nothing, pins and protected sets
hold, and a policy that raises changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from radix_evict import EvictionPolicy, PolicyError, load_policy
from radix_evict.vllm.tree import ChunkTree


def k(i: int) -> bytes:
    return i.to_bytes(8, "big") + b"\0\0\0\0"


def chain(tree: ChunkTree, ids: list[int], *, pinned: bool = False) -> None:
    parent = None
    for j, i in enumerate(ids):
        tree.insert(k(i), f"c{i}", parent, end=(j + 1) * 16, start=j * 16, pinned=pinned)
        parent = k(i)


def lru_tree() -> ChunkTree:
    return ChunkTree(lambda: load_policy("lru"))


def keys(out: list[tuple[bytes, Any]] | None) -> list[int]:
    assert out is not None
    return [int.from_bytes(key[:8], "big") for key, _ in out]


def test_tails_go_before_heads_and_exactly_n() -> None:
    t = lru_tree()
    chain(t, [1, 2, 3])
    chain(t, [4, 5])
    assert keys(t.evict(2)) == [3, 2]  # the older chain's tail first, never its head first
    assert keys(t.evict(2)) == [1, 5]
    assert t.problems() == [] and len(t) == 1


def test_positions_give_tokens() -> None:
    t = lru_tree()
    chain(t, [1, 2, 3])
    node = t.node(k(3))
    assert node is not None and node.prefix_len == 48 and node.num_tokens == 16


def test_not_enough_is_none_and_nothing_changes() -> None:
    t = lru_tree()
    chain(t, [1, 2, 3])
    t.pin(k(2))  # 2 in use: 1 and 2 stay (a prefix of a chunk in use), only 3 may go
    assert t.evict(2) is None
    assert len(t) == 3 and t.problems() == []
    assert keys(t.evict(1)) == [3]


def test_protected_keeps_its_prefix() -> None:
    t = lru_tree()
    chain(t, [1, 2])
    chain(t, [3, 4])
    assert keys(t.evict(2, {k(2)})) == [4, 3]
    assert t.evict(1, {k(2)}) is None
    assert t.problems() == []


def test_pinned_insert_unpins() -> None:
    t = lru_tree()
    chain(t, [1, 2], pinned=True)
    assert t.evict(1) is None
    t.unpin(k(1))
    assert t.evict(1) is None  # 2 is still pinned: its prefix 1 stays
    t.unpin(k(2))
    assert keys(t.evict(2)) == [2, 1]


def test_remove_splices_children_up() -> None:
    t = lru_tree()
    chain(t, [1, 2, 3], pinned=True)
    t.remove(k(2))
    assert t.problems() == []
    node = t.node(k(3))
    assert node is not None and node.parent is t.node(k(1))


class Boom(EvictionPolicy):
    name = "boom"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.armed = False

    def score(self, node: Any) -> float:
        if self.armed:
            raise ZeroDivisionError("armed")
        return float(node.last_access_time)


def test_a_policy_that_raises_changes_nothing() -> None:
    t = ChunkTree(Boom, source="testdist 1.0 (entry point 'boom')", distribution="testdist")
    chain(t, [1, 2, 3])
    before = [(key, t.node(key).lock_ref) for key in map(k, [1, 2, 3])]  # type: ignore[union-attr]
    t.policy.armed = True  # type: ignore[attr-defined]
    t.touch([k(3)])
    with pytest.raises(PolicyError) as err:
        t.evict(1)
    assert err.value.policy == "boom" and err.value.distribution == "testdist"
    assert "testdist 1.0" in str(err.value) and "ZeroDivisionError" in str(err.value)
    assert [(key, t.node(key).lock_ref) for key in map(k, [1, 2, 3])] == before  # type: ignore[union-attr]
    assert t.problems() == []
    t.policy.armed = False  # type: ignore[attr-defined]
    assert keys(t.evict(3)) == [3, 2, 1]


class EvictBoom(Boom):
    def on_evict(self, node: Any) -> None:
        if node.value == k(1):
            raise RuntimeError("no")


def test_on_evict_raising_links_every_victim_back() -> None:
    t = ChunkTree(EvictBoom)
    chain(t, [1, 2, 3])
    with pytest.raises(PolicyError, match="on_evict"):
        t.evict(3)
    assert len(t) == 3 and t.problems() == []
    assert keys(t.evict(2)) == [3, 2]


def test_clear_starts_the_policy_afresh() -> None:
    made: list[Boom] = []

    def make() -> Boom:
        made.append(Boom())
        return made[-1]

    t = ChunkTree(make)
    chain(t, [1])
    t.clear()
    assert len(made) == 2 and t.policy is made[1] and len(t) == 0


class Garbage(Boom):
    def score(self, node: Any) -> Any:
        return float("nan") if self.armed else float(node.last_access_time)


def test_a_score_that_is_not_a_number_is_refused_naming_the_policy() -> None:
    t = ChunkTree(Garbage)
    chain(t, [1, 2])
    t.policy.armed = True  # type: ignore[attr-defined]
    t.touch([k(2)])
    with pytest.raises(PolicyError, match=r"policy 'boom'.*nan"):
        t.evict(1)
    assert len(t) == 2 and t.problems() == []


class Countdown(EvictionPolicy):
    """Volatile: the score reads outside state (a global budget), re-read on every evict."""

    name = "countdown"
    volatile_score = True
    favourite = 1

    def score(self, node: Any) -> float:
        return 0.0 if node.value == k(Countdown.favourite) else 1.0


def test_volatile_scores_are_taken_afresh_on_every_evict() -> None:
    t = ChunkTree(Countdown)
    for i in (1, 2, 3):
        t.insert(k(i), None, None, pinned=False)
    Countdown.favourite = 2
    assert keys(t.evict(1)) == [2]
    Countdown.favourite = 3  # nothing touched node 3: only a re-score sees the change
    assert keys(t.evict(1)) == [3]
