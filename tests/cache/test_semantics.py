"""Every rule and worked example of the semantics page, as unit tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.rigs import Rig

from radix_evict import KVPool, PolicyConfigError, RadixCache
from radix_evict.testing.invariants import check_cache


def path_tokens(rig: Rig, tokens: list[int]) -> int:
    return rig.cache.match_prefix(tokens).prefix_len


# ------------------------------------------------------------------ keys and pages
@pytest.mark.parametrize("page", [1, 4, 16])
def test_keys_are_cut_to_whole_pages(page: int) -> None:
    rig = Rig(size=256, page_size=page)
    tokens = list(range(100, 100 + 2 * page + 3))
    aligned = len(tokens) // page * page
    new = rig.pool.alloc(aligned)
    assert new is not None
    # Slots past the aligned part are the caller's: the cache neither keeps nor frees them.
    caller_tail = torch.tensor([250, 251, 252])[: len(tokens) - aligned]
    free_before = rig.pool.available_size()
    assert rig.cache.insert(tokens, torch.cat([new, caller_tail])) == 0
    assert rig.pool.available_size() == free_before
    assert rig.cache.total_size() == aligned
    m = rig.cache.match_prefix(tokens)
    assert m.prefix_len == aligned and torch.equal(m.indices, new)
    # A query shorter than one page matches nothing.
    assert rig.cache.match_prefix(tokens[: page - 1]).prefix_len == 0
    check_cache(rig.cache)


@pytest.mark.parametrize("page", [1, 4, 16])
def test_splits_only_on_page_boundaries(page: int) -> None:
    rig = Rig(size=512, page_size=page)
    a = list(range(0, 4 * page))
    rig.insert(a)
    b = a[: page + page // 2] + [999] * (3 * page)
    rig.insert(b)
    # The common length (1.5 pages) floors to one page: the split is after page 1.
    lengths = sorted(x.num_tokens for x in rig.cache.iter_nodes())
    assert all(n % page == 0 for n in lengths)
    assert rig.cache.match_prefix(b).prefix_len == len(b) // page * page
    assert rig.cache.match_prefix(a[:page]).prefix_len == page
    check_cache(rig.cache)


def test_empty_key_matches_root() -> None:
    rig = Rig()
    m = rig.cache.match_prefix([])
    assert m.prefix_len == 0 and m.last_node is rig.cache.root and m.last_node.parent is None
    assert len(m.indices) == 0


def test_child_found_by_first_page_tuple() -> None:
    rig = Rig(page_size=4)
    rig.insert([1, 2, 3, 4, 5, 6, 7, 8])
    rig.insert([1, 2, 3, 9, 5, 6, 7, 8])  # same first token, different first page
    assert rig.cache.match_prefix([1, 2, 3, 9, 5, 6, 7, 8]).prefix_len == 8
    assert len(rig.cache.root.children) == 2


# ------------------------------------------------------------------ match_prefix
def test_match_splits_and_keeps_the_original_node_as_the_tail() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4, 5, 6])
    original = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).last_node
    original.hit_count = 5
    original.priority = 3
    rig.cache.inc_lock_ref(original)
    m = rig.cache.match_prefix([1, 2, 3, 9])
    head = m.last_node
    assert m.prefix_len == 3 and head is not original
    assert original.parent is head and original.key.tolist() == [4, 5, 6]
    assert (head.hit_count, head.priority, head.lock_ref) == (5, 3, 1)
    assert head.creation_time == original.creation_time
    # The lock handle on the original node stays valid: unlocking releases both parts.
    rig.cache.dec_lock_ref(original)
    assert rig.cache.protected_size() == 0 and rig.cache.evictable_size() == 6
    check_cache(rig.cache)


def test_match_stamps_the_path_and_never_counts_hits() -> None:
    rig = Rig()
    rig.insert([1, 2, 3])
    rig.insert([7, 8])
    node = rig.cache.match_prefix([1, 2, 3]).last_node
    hits = node.hit_count
    other = rig.cache.match_prefix([7, 8]).last_node
    assert other.last_access_time > node.last_access_time
    rig.cache.match_prefix([1, 2, 3])
    assert node.last_access_time > other.last_access_time
    assert node.hit_count == hits


# ------------------------------------------------------------------ insert
def test_hit_count_counts_each_inserting_request_once() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4])
    node = rig.cache.match_prefix([1, 2, 3, 4]).last_node
    assert node.hit_count == 1  # a brand-new node starts at 1
    rig.insert([1, 2, 3, 4, 5, 6])
    assert node.hit_count == 2
    leaf = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).last_node
    assert leaf.hit_count == 1


def test_hit_count_skips_nodes_within_inserted_len() -> None:
    """Chunked prefill: the re-insert of an already inserted chunk counts nothing new."""
    rig = Rig()
    rig.insert([1, 2, 3, 4])  # chunk 1
    first = rig.cache.match_prefix([1, 2, 3, 4]).last_node
    rig.insert([1, 2, 3, 4, 5, 6], inserted_len=4)  # chunk 2 of the same request
    assert first.hit_count == 1
    second = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).last_node
    assert second.hit_count == 1
    rig.insert([1, 2, 3, 4, 5, 6], inserted_len=6)  # nothing new at all
    assert (first.hit_count, second.hit_count) == (1, 1)


def test_priority_is_max_propagated_up_the_path() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4], priority=1)
    rig.insert([1, 2, 3, 4, 5, 6], priority=5)
    shared = rig.cache.match_prefix([1, 2, 3, 4]).last_node
    tail = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).last_node
    assert (shared.priority, tail.priority) == (5, 5)
    rig.insert([1, 2, 9], priority=2)  # splits [1,2,3,4]: the new parent keeps the max
    head = rig.cache.match_prefix([1, 2]).last_node
    assert head.priority == 5
    assert rig.cache.match_prefix([1, 2, 9]).last_node.priority == 2
    rig.insert([1, 2, 3, 4], priority=None)  # None counts as 0
    assert shared.priority == 5


def test_insert_frees_duplicate_slots_itself() -> None:
    rig = Rig(size=64)
    rig.insert([1, 2, 3, 4, 5, 6])
    held = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).indices
    # A second request computed the same prefix in fresh slots (no prefix reuse).
    fresh = rig.pool.alloc(8)
    assert fresh is not None
    before = rig.pool.available_size()
    matched = rig.cache.insert([1, 2, 3, 4, 5, 6, 7, 8], fresh, prev_prefix_len=0)
    assert matched == 6
    assert rig.pool.available_size() == before + 6  # fresh[0:6] duplicated the tree
    assert torch.equal(
        rig.cache.match_prefix([1, 2, 3, 4, 5, 6, 7, 8]).indices, torch.cat([held, fresh[6:]])
    )
    check_cache(rig.cache)


def test_prev_prefix_len_slots_are_not_freed_again() -> None:
    rig = Rig(size=64)
    rig.insert([1, 2, 3, 4])
    m = rig.cache.match_prefix([1, 2, 3, 4, 5, 6])
    rig.cache.inc_lock_ref(m.last_node)
    new = rig.pool.alloc(2)
    assert new is not None
    free_before = rig.pool.available_size()
    assert (
        rig.cache.insert(
            [1, 2, 3, 4, 5, 6], torch.cat([m.indices, new]), prev_prefix_len=m.prefix_len
        )
        == 4
    )
    assert rig.pool.available_size() == free_before
    rig.cache.dec_lock_ref(m.last_node)
    check_cache(rig.cache)


def test_insert_returns_tokens_already_cached() -> None:
    rig = Rig()
    assert rig.insert([5, 6, 7]) == 0
    assert rig.insert([5, 6, 7, 8]) == 3


# ------------------------------------------------------------------ locks
def test_locks_move_tokens_between_evictable_and_protected() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4])
    rig.insert([1, 2, 3, 4, 5, 6])
    leaf = rig.cache.match_prefix([1, 2, 3, 4, 5, 6]).last_node
    assert (rig.cache.evictable_size(), rig.cache.protected_size()) == (6, 0)
    rig.cache.inc_lock_ref(leaf)
    assert (rig.cache.evictable_size(), rig.cache.protected_size()) == (0, 6)
    rig.cache.inc_lock_ref(leaf)  # a second lock moves nothing more
    assert (rig.cache.evictable_size(), rig.cache.protected_size()) == (0, 6)
    rig.cache.dec_lock_ref(leaf)
    assert rig.cache.protected_size() == 6
    rig.cache.dec_lock_ref(leaf)
    assert (rig.cache.evictable_size(), rig.cache.protected_size()) == (6, 0)
    assert rig.cache.root.lock_ref >= 1  # the root is always locked


def test_locked_nodes_and_ancestors_are_never_evicted() -> None:
    rig = Rig()
    rig.insert([1, 2, 3])
    rig.insert([1, 2, 3, 4, 5])
    rig.insert([8, 9])
    leaf = rig.cache.match_prefix([1, 2, 3, 4, 5]).last_node
    rig.cache.inc_lock_ref(leaf)
    assert rig.cache.evict(100) == 2  # only [8, 9] is unlocked
    assert rig.cache.match_prefix([1, 2, 3, 4, 5]).prefix_len == 5
    rig.cache.dec_lock_ref(leaf)
    check_cache(rig.cache)


# ------------------------------------------------------------------ evict
def test_evict_takes_whole_nodes_and_cascades_to_parents() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4])
    rig.insert([1, 2, 3, 4, 5, 6, 7])
    rig.insert([9, 9])
    assert rig.cache.evict(1) == 3  # the LRU leaf [5, 6, 7]: a whole node, overshooting
    assert rig.leaf_tokens() == [[1, 2, 3, 4], [9, 9]]
    # Its parent became a leaf and joined the candidates; it is older than [9, 9].
    assert rig.cache.evict(5) == 6
    assert rig.cache.total_size() == 0 and rig.pool.available_size() == rig.pool.size


def test_evict_returns_less_only_when_nothing_is_left() -> None:
    rig = Rig()
    rig.insert([1, 2, 3])
    assert rig.cache.evict(50) == 3
    assert rig.cache.evict(50) == 0


def test_lfu_evicts_fewest_hits_then_oldest() -> None:
    rig = Rig(policy="lfu")
    rig.insert([1, 1])
    rig.insert([2, 2])
    rig.insert([2, 2])  # hit_count 2
    rig.insert([3, 3])
    assert rig.cache.evict(1) == 2
    assert rig.leaf_tokens() == [[2, 2], [3, 3]]  # [1,1]: one hit and older than [3,3]


@pytest.mark.parametrize(("threshold", "protected_survivor"), [(2, True), (3, False)])
def test_slru_protects_at_the_threshold(threshold: int, protected_survivor: bool) -> None:
    rig = Rig(policy="slru", config={"protected_threshold": threshold})
    rig.insert([1, 1])
    rig.insert([1, 1])  # hit_count 2: protected iff threshold <= 2
    rig.insert([2, 2])  # hit_count 1, more recent
    rig.cache.evict(1)
    survivors = rig.leaf_tokens()
    assert survivors == ([[1, 1]] if protected_survivor else [[2, 2]])


def test_slru_default_threshold_is_two() -> None:
    rig = Rig(policy="slru")
    assert rig.cache.policy.config.protected_threshold == 2


def test_priority_evicts_low_priority_first() -> None:
    rig = Rig(policy="priority")
    rig.insert([1, 1], priority=5)
    rig.insert([2, 2], priority=0)
    rig.insert([3, 3], priority=5)
    rig.cache.evict(1)
    assert rig.leaf_tokens() == [[1, 1], [3, 3]]
    rig.cache.evict(1)
    assert rig.leaf_tokens() == [[3, 3]]  # equal priority: least recent first


@pytest.mark.parametrize(
    ("policy", "victim"), [("fifo", [1, 1]), ("mru", [1, 1]), ("filo", [2, 2])]
)
def test_hidden_time_policies(policy: str, victim: list[int]) -> None:
    rig = Rig(policy=policy)
    rig.insert([1, 1])  # created first
    rig.insert([2, 2])
    rig.cache.match_prefix([1, 1])  # ... but used last
    rig.cache.evict(1)
    assert victim not in rig.leaf_tokens()


# ------------------------------------------------------------------ tlru
A = list(range(100, 108))


@pytest.mark.parametrize(
    ("config", "victim"),
    [
        (None, "A"),
        ({"threshold": 4, "next_prompt_estimate": 0}, "B"),
        ({"threshold": 4, "next_prompt_estimate": 2}, "B"),
    ],
)
def test_tlru_example_1(config: dict[str, int] | None, victim: str) -> None:
    rig = Rig(policy="lru" if config is None else "tlru", config=config)
    rig.insert(A)
    rig.insert([1, 2])
    rig.cache.evict(1)
    left = rig.leaf_tokens()
    assert left == ([[1, 2]] if victim == "A" else [A])


@pytest.mark.parametrize(
    "config",
    [
        {"threshold": 4, "next_prompt_estimate": 4},
        {"threshold": 4, "next_prompt_estimate": 6},
        None,
        {},
    ],
)
def test_tlru_example_1_rejected_configs(config: dict[str, int] | None) -> None:
    with pytest.raises(PolicyConfigError, match="threshold"):
        Rig(policy="tlru", config=config)


def test_tlru_example_2_trims_tails_then_falls_back_to_lru() -> None:
    rig = Rig(policy="tlru", config={"threshold": 6, "next_prompt_estimate": 2})
    rig.insert(A)
    for end in (2, 4, 6, 8):
        rig.insert(list(range(end)))
    conv_leaf = rig.cache.match_prefix(list(range(8))).last_node
    assert conv_leaf.history_len == 8
    rig.cache.evict(1)
    assert rig.cache.match_prefix(list(range(8))).prefix_len == 6  # B's [6, 7]
    rig.cache.evict(1)
    assert rig.cache.match_prefix(list(range(8))).prefix_len == 4  # B's [4, 5]
    rig.cache.evict(1)
    assert rig.cache.match_prefix(A).prefix_len == 0  # then A, by plain recency
    assert rig.cache.match_prefix(list(range(8))).prefix_len == 4


def test_tlru_example_3_splits_never_shorten_history() -> None:
    rig = Rig(policy="tlru", config={"threshold": 6, "next_prompt_estimate": 2})
    rig.insert(A)
    rig.insert(list(range(8)))
    rig.cache.match_prefix([0, 1, 2, 3])  # splits B at 4
    rig.insert([0, 1, 90, 91])  # splits again at 2
    for x in rig.cache.iter_nodes():
        if x.key.tolist()[:1] == [0] or x.key.tolist()[:1] in ([2], [4], [90]):
            assert x.history_len == 8 or x.key.tolist() == [90, 91]
    order = []
    for _ in range(3):
        before = {tuple(k) for k in rig.leaf_tokens()}
        rig.cache.evict(1)
        after = {tuple(k) for k in rig.leaf_tokens()}
        order.append(sorted(before - after))
    assert order == [[(4, 5, 6, 7)], [(90, 91)], [tuple(A)]]
    check_cache(rig.cache)


def test_tlru_prefix_and_history_bookkeeping() -> None:
    rig = Rig(policy="tlru", config={"threshold": 6, "next_prompt_estimate": 2})
    rig.insert([1, 2, 3, 4])
    rig.insert([1, 2, 3, 4, 5, 6, 7])
    head = rig.cache.match_prefix([1, 2, 3, 4]).last_node
    leaf = rig.cache.match_prefix([1, 2, 3, 4, 5, 6, 7]).last_node
    assert (head.prefix_len, head.history_len) == (4, 7)
    assert (leaf.prefix_len, leaf.history_len, leaf.num_tokens) == (7, 7, 3)
    rig.cache.evict(3)  # history never shrinks when the tail goes
    assert head.history_len == 7


# ------------------------------------------------------------------ reset and stats
def test_reset_frees_everything_and_refuses_while_locked() -> None:
    rig = Rig()
    rig.insert([1, 2, 3])
    rig.insert([4, 5])
    node = rig.cache.match_prefix([1, 2, 3]).last_node
    rig.cache.inc_lock_ref(node)
    with pytest.raises(RuntimeError, match="locked"):
        rig.cache.reset()
    check_cache(rig.cache)
    rig.cache.dec_lock_ref(node)
    rig.cache.reset()
    assert rig.cache.total_size() == 0 and rig.pool.available_size() == rig.pool.size
    with pytest.raises(ValueError, match="not in this cache"):
        rig.cache.inc_lock_ref(node)


def test_stats_count_queries_hits_inserts_and_evictions() -> None:
    rig = Rig()
    rig.insert([1, 2, 3, 4])
    rig.cache.match_prefix([1, 2, 9])
    rig.cache.evict(1)
    s = rig.cache.stats
    assert s.queried_tokens == 4 + 3 and s.hit_tokens == 2
    assert s.inserted_tokens == 4 and s.evict_calls == 1 and s.evicted_tokens == 2
    assert s.as_dict()["hit_rate"] == pytest.approx(2 / 7)


def test_every_slot_the_cache_lets_go_goes_through_the_allocators_free() -> None:
    """A pool wrapping ``free`` (to poison or count) sees evicted, duplicate and reset slots."""
    seen: list[int] = []

    class CountingPool(KVPool):
        def free(self, indices: torch.Tensor) -> None:
            seen.extend(indices.tolist())
            super().free(indices)

    pool = CountingPool(size=64, device="cpu")
    cache = RadixCache(pool)
    first = pool.alloc(4)
    assert first is not None
    cache.insert([1, 2, 3, 4], first)
    dup = pool.alloc(6)
    assert dup is not None
    cache.insert([1, 2, 3, 4, 5, 6], dup)  # dup[:4] duplicate the tree
    assert sorted(seen) == sorted(dup[:4].tolist())
    cache.evict(2)  # the [5, 6] leaf
    assert sorted(seen) == sorted(dup[:4].tolist() + dup[4:].tolist())
    cache.reset()
    assert sorted(seen) == sorted(dup.tolist() + first.tolist())
    assert pool.available_size() == 64


def test_strided_and_narrow_token_arrays_match_like_their_contiguous_copies() -> None:
    pool = KVPool(size=64, device="cpu")
    cache = RadixCache(pool)
    base = np.arange(40, dtype=np.int64)
    strided = base[::2]  # a view whose bytes are not one run: key_view must copy it
    slots = pool.alloc(20)
    assert slots is not None
    assert cache.insert(strided, slots) == 0
    m = cache.match_prefix(np.ascontiguousarray(strided))
    assert m.prefix_len == 20 and m.indices.tolist() == slots.tolist()
    assert cache.match_prefix(strided[:7]).prefix_len == 7
    assert cache.match_prefix(base[::2].astype(np.int32)).prefix_len == 20
    assert cache.match_prefix(base[:7]).prefix_len == 1  # 0 matches, 1 != 2
