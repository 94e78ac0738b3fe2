"""What ``s3fifo`` does: quick demotion of one-hit leaves, ghosts into main, second chances."""

from __future__ import annotations

import pytest
from classic_reference import LRU, S3FIFO, Radix, hit_rate, zipf_trace
from classics_testing import (
    evict_order,
    lookup,
    make_cache,
    node_of,
    pin,
    put,
    put_without_lookup,
)
from radix_evict_classics import S3FIFOConfig, S3FIFOPolicy

from radix_evict import PolicyConfigError, registry

A, B, C = [10, 11], [20, 21], [30, 31]


def test_a_one_hit_new_leaf_goes_before_a_reaccessed_older_one() -> None:
    for policy, victim in (("s3fifo", 1), ("fifo", 0), ("lru", 0)):
        cache = make_cache(policy)
        put(cache, A)
        lookup(cache, A)  # A is used again: S3-FIFO moves it to main when its turn in S comes
        put(cache, B)  # B is newer but nobody came back for it
        if policy == "lru":
            lookup(cache, B)  # ...and LRU would keep whichever was touched last
        assert evict_order(cache, [A, B], 1) == [victim], policy


def test_a_reaccessed_leaf_is_bound_for_main_and_a_one_hit_one_for_the_ghosts() -> None:
    policy = S3FIFOPolicy()
    cache = make_cache(policy)
    put(cache, A)
    put(cache, B)
    lookup(cache, A)
    a, b = node_of(cache, A), node_of(cache, B)
    assert policy.will_move_to_main(a) and not policy.will_move_to_main(b)
    assert policy.queue_of(a) == policy.queue_of(b) == "small"
    assert policy.score(a) > policy.score(b)
    cache.evict(1)  # B: small-queue victim, so a ghost
    assert policy.ghost_count == 1


def test_a_ghost_hit_goes_to_the_main_queue() -> None:
    policy = S3FIFOPolicy()
    cache = make_cache(policy)
    pin(cache)  # ghosts remember 0.9 x the cache's tokens: make it more than A's
    put(cache, A)
    assert cache.evict(1) == 2  # never reused: evicted from S into the ghost FIFO
    put(cache, A)  # the prefix comes back
    assert policy.queue_of(node_of(cache, A)) == "main"
    assert policy.ghost_count == 0
    put(cache, B)  # newer, one hit: small queue
    assert policy.queue_of(node_of(cache, B)) == "small"
    assert evict_order(cache, [A, B], 1) == [1]


def test_a_ghost_matches_the_returning_tokens_however_the_new_leaf_is_cut() -> None:
    """The ghost is the branch (parent prefix + first token), not where the node ended."""
    policy = S3FIFOPolicy()
    cache = make_cache(policy)
    pin(cache)
    put(cache, [1, 2])
    put_without_lookup(cache, [1, 2, 3, 4])  # a leaf [3, 4] under [1, 2], neither reused
    assert cache.evict(4) == 4  # [3, 4] and then [1, 2]: two ghosts
    assert policy.ghost_count == 2
    put(cache, [1, 2, 3, 4, 5, 6])  # one new leaf [1..6] under the root: the [1, 2] ghost
    assert policy.queue_of(node_of(cache, [1, 2, 3, 4, 5, 6])) == "main"


def test_main_reinserts_a_node_that_was_hit_before_evicting_it() -> None:
    cache = make_cache("s3fifo")
    pin(cache)
    for p in (A, B):  # both ghosts, then both back: main, A older than B
        put(cache, p)
    cache.evict(4)
    put(cache, A)
    put(cache, B)
    lookup(cache, A)  # one more pass for A
    assert evict_order(cache, [A, B], 1) == [1]


def test_without_ghosts_a_returning_prefix_starts_in_the_small_queue() -> None:
    policy = S3FIFOPolicy(S3FIFOConfig(ghost_fraction=0.0))
    cache = make_cache(policy)
    pin(cache)
    put(cache, A)
    cache.evict(1)
    put(cache, A)
    assert policy.ghost_count == 0 and policy.queue_of(node_of(cache, A)) == "small"


def test_two_hits_needed_with_move_to_main_two() -> None:
    policy = S3FIFOPolicy(S3FIFOConfig(move_to_main=2))
    cache = make_cache(policy)
    put(cache, A)
    lookup(cache, A)
    a = node_of(cache, A)
    assert not policy.will_move_to_main(a)
    lookup(cache, A)
    assert policy.will_move_to_main(a)


@pytest.mark.parametrize(("c", "alpha"), [(50, 1.0), (200, 0.8)])
def test_a_flat_cache_tracks_textbook_s3fifo(c: int, alpha: float) -> None:
    """Unit items under the root: within a point of Algorithm 1, S near its 10%, well above LRU."""
    trace = zipf_trace(8000, 2000, alpha, seed=c)
    policy = S3FIFOPolicy()
    ours = hit_rate(Radix(c, policy), trace)
    assert abs(ours - hit_rate(S3FIFO(c), trace)) < 0.01
    assert ours > hit_rate(LRU(c), trace) + 0.03
    sizes = policy.queue_tokens()
    assert 0.03 <= sizes["small"] / (sizes["small"] + sizes["main"]) <= 0.25, sizes


def test_registered_offered_and_strict() -> None:
    assert "s3fifo" in registry.choices()
    assert registry.check_choice("s3fifo").distribution == "radix-evict-classics"
    for config, key, fragment in (
        ({"small_fraction": 1.0}, "small_fraction", "< 1"),
        ({"small_fraction": 0}, "small_fraction", "> 0"),
        ({"small_fraction": "0.1"}, "small_fraction", "must be a number"),
        ({"ghost_fraction": -0.5}, "ghost_fraction", ">= 0"),
        ({"move_to_main": 0}, "move_to_main", ">= 1"),
        ({"max_freq": 2.0}, "max_freq", "must be an integer"),
        ({"small_fracton": 0.2}, "small_fracton", "did you mean 'small_fraction'?"),
    ):
        with pytest.raises(PolicyConfigError) as info:
            make_cache("s3fifo", config)
        assert info.value.problems[0].key == key
        assert fragment in str(info.value), str(info.value)
        assert "'s3fifo'" in str(info.value)
