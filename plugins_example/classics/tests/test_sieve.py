"""What ``sieve`` does: SIEVE's hand and visited bits, exactly, and how it meets the radix tree."""

from __future__ import annotations

import random

import pytest
from classic_reference import LRU, Radix, Sieve, hit_rate, zipf_trace
from classics_testing import (
    evict_order,
    holds,
    lookup,
    make_cache,
    node_of,
    put,
    put_without_lookup,
)
from radix_evict_classics import SieveConfig, SievePolicy

from radix_evict import PolicyConfigError

A, B, C, D = [10, 11], [20, 21], [30, 31], [40, 41]


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("seed", range(12))
def test_a_flat_cache_evicts_exactly_as_textbook_sieve(seed: int, k: int) -> None:
    """Single-token items under the root: every step leaves the same items as Algorithm 1."""
    rng = random.Random(seed)
    ref, ours = Sieve(8, k), Radix(8, "sieve", {"max_visits": k})
    for step in range(300):
        x = rng.randrange(16) if rng.random() < 0.7 else rng.randrange(100)
        assert ours.access(x) == ref.access(x), (seed, step)
        assert ours.items() == sorted(ref.queue), (seed, step)


def test_a_visited_leaf_outlives_a_newer_unvisited_one_where_fifo_drops_it() -> None:
    for policy, victim in (("sieve", 1), ("fifo", 0)):
        cache = make_cache(policy)
        put(cache, A)
        put(cache, B)
        lookup(cache, A)
        assert evict_order(cache, [A, B], 1) == [victim], policy


def test_hits_do_not_reorder_the_queue() -> None:
    """Both visited: the hand clears both and takes the older one; LRU takes the less recent."""
    for policy, victim in (("sieve", 0), ("lru", 1)):
        cache = make_cache(policy)
        put(cache, A)
        put(cache, B)
        lookup(cache, B)
        lookup(cache, A)
        assert evict_order(cache, [A, B], 1) == [victim], policy


def test_the_hand_stays_where_it_stopped() -> None:
    """A survives behind the hand while newer C and D go (quick demotion); LRU drops A."""
    for policy, order in (("sieve", [1, 2, 3]), ("lru", [1, 2, 0])):
        cache = make_cache(policy)
        put(cache, A)
        put(cache, B)
        put(cache, C)
        lookup(cache, A)
        gone = evict_order(cache, [A, B, C], 1)
        put(cache, D)
        gone += evict_order(cache, [A, B, C, D], 2)
        assert gone == order, policy


def test_a_prefix_the_hand_skipped_goes_when_it_becomes_a_leaf_unless_visited() -> None:
    """The parent is passed over while inner; once its child is gone it is overdue (as in FIFO)."""
    parent, child, other = [1, 2], [1, 2, 3, 4], [9, 9]
    for visited, victims in ((False, [1, 0]), (True, [1, 2])):
        cache = make_cache("sieve")
        put(cache, parent)
        if visited:
            put(cache, child)  # its lookup reaches the parent: visited
        else:
            put_without_lookup(cache, child)
        put(cache, other)
        assert evict_order(cache, [parent, child, other], 2) == victims, visited


def test_a_hit_marks_once_and_a_counter_counts_to_max_visits() -> None:
    for k, expect in ((1, 1), (3, 3)):
        policy = SievePolicy(SieveConfig(max_visits=k))
        cache = make_cache(policy)
        put(cache, A)
        for _ in range(5):
            lookup(cache, A)
        assert policy.visits(node_of(cache, A)) == expect


def test_scan_resistance_on_a_zipf_trace_beats_lru() -> None:
    trace = zipf_trace(6000, 1000, 0.9, seed=3, scan_every=100, scan_len=30)
    assert hit_rate(Radix(60, "sieve"), trace) > hit_rate(LRU(60), trace) + 0.03


def test_registered_offered_and_strict() -> None:
    from radix_evict import registry

    assert "sieve" in registry.choices()
    assert registry.check_choice("sieve").distribution == "radix-evict-classics"
    for bad in ({"max_visits": 0}, {"max_visits": "1"}, {"max_visits": 1.0}):
        with pytest.raises(PolicyConfigError) as info:
            make_cache("sieve", bad)
        assert info.value.problems[0].key == "max_visits"
    with pytest.raises(PolicyConfigError, match="did you mean 'max_visits'"):
        make_cache("sieve", {"max_visit": 2})


def test_holds_reads_without_touching() -> None:
    policy = SievePolicy()
    cache = make_cache(policy)
    put(cache, A)
    assert holds(cache, A) and not holds(cache, B)
    assert policy.visits(node_of(cache, A)) == 0  # holds() is no lookup
