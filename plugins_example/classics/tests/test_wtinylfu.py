"""What ``wtinylfu`` does: a count-min sketch over prefix fingerprints deciding admission."""

from __future__ import annotations

from collections import Counter

import pytest
from classic_reference import LRU, Radix, WTinyLFU, hit_rate, zipf_trace
from classics_testing import (
    evict_order,
    lookup,
    make_cache,
    node_of,
    pin,
    put,
    put_without_lookup,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from radix_evict_classics import CountMinSketch, WTinyLFUConfig, WTinyLFUPolicy

from radix_evict import PolicyConfigError, registry

FREQUENT, VICTIM, ONE_OFF = [10, 11], [20, 21], [30, 31]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(1, 4))
def test_the_sketch_never_underestimates_and_caps_at_15(keys: list[int], depth: int) -> None:
    sketch = CountMinSketch(width=64, depth=depth)
    for key in keys:
        sketch.add(sketch.cells(key))
    for key, count in Counter(keys).items():
        assert min(count, 15) <= sketch.estimate(sketch.cells(key)) <= 15


def test_the_sketch_halves_after_the_reset_period() -> None:
    policy = WTinyLFUPolicy(WTinyLFUConfig(reset_period=8))
    cache = make_cache(policy)
    put(cache, FREQUENT)
    for _ in range(6):
        lookup(cache, FREQUENT)
    assert policy.frequency(node_of(cache, FREQUENT)) == 7
    lookup(cache, FREQUENT)  # the 8th addition: every counter halves
    assert policy.frequency(node_of(cache, FREQUENT)) == 4
    assert policy.sketch.additions == 4


def test_accesses_are_lookups_and_new_leaves_not_insert_walks() -> None:
    policy = WTinyLFUPolicy()
    cache = make_cache(policy)
    put(cache, FREQUENT)  # a new leaf: 1
    lookup(cache, FREQUENT)  # a lookup: 2
    put_without_lookup(cache, [*FREQUENT, 12, 13])  # walks it without looking it up
    assert policy.frequency(node_of(cache, FREQUENT)) == 2
    assert policy.frequency(node_of(cache, [*FREQUENT, 12, 13])) == 1


def test_a_frequent_prefix_is_admitted_when_it_returns_and_a_one_off_is_not() -> None:
    policy = WTinyLFUPolicy()
    cache = make_cache(policy)
    pin(cache)  # locked: never a victim
    put(cache, FREQUENT)
    for _ in range(4):
        lookup(cache, FREQUENT)  # FREQUENT: 5 accesses
    assert cache.evict(2) == 2 and not policy.victim()  # it leaves; the main cache is empty
    put(cache, VICTIM)  # nothing to duel with: admitted; now the main cache's victim (freq 1)
    assert policy.admitted(node_of(cache, VICTIM)) and policy.victim() is node_of(cache, VICTIM)
    assert policy.admission_threshold == 1
    put(cache, ONE_OFF)  # a one-off: frequency 1, not above the victim's: refused
    assert not policy.admitted(node_of(cache, ONE_OFF))
    put(cache, FREQUENT)  # it returns: the sketch remembers its prefix, 6 > 1: admitted
    assert policy.frequency(node_of(cache, FREQUENT)) == 6
    assert policy.admitted(node_of(cache, FREQUENT))
    # the refused one-off goes first, then the victim; the frequent prefix stays
    assert evict_order(cache, [FREQUENT, VICTIM, ONE_OFF], 2) == [2, 1]
    lru = make_cache("lru")
    for p in (VICTIM, ONE_OFF, FREQUENT):
        put(lru, p)
    assert evict_order(lru, [FREQUENT, VICTIM, ONE_OFF], 1) == [1]  # LRU: the oldest first


def test_a_hit_in_probation_promotes_to_protected() -> None:
    policy = WTinyLFUPolicy()
    cache = make_cache(policy)
    pin(cache)
    put(cache, VICTIM)
    v = node_of(cache, VICTIM)
    assert policy.segment_of(v) == "window"
    put(cache, ONE_OFF)  # refused (no more frequent than VICTIM)
    cache.evict(2)  # the one-off goes: the eviction clock passes the end of VICTIM's window
    assert policy.segment_of(v) == "probation"
    lookup(cache, VICTIM)
    assert policy.segment_of(v) == "protected"


@pytest.mark.parametrize(("c", "alpha"), [(50, 1.0), (200, 0.8)])
def test_a_flat_cache_tracks_textbook_wtinylfu(c: int, alpha: float) -> None:
    """Unit items under the root: within 1.5 points of W-TinyLFU, and above LRU."""
    trace = zipf_trace(8000, 2000, alpha, seed=c, scan_every=200, scan_len=20)
    ours = hit_rate(Radix(c, "wtinylfu"), trace)
    assert abs(ours - hit_rate(WTinyLFU(c), trace)) < 0.015
    assert ours > hit_rate(LRU(c), trace) + 0.03


def test_registered_offered_and_strict() -> None:
    assert "wtinylfu" in registry.choices()
    assert registry.check_choice("wtinylfu").distribution == "radix-evict-classics"
    for config, key, fragment in (
        ({"window_fraction": 1.0}, "window_fraction", "< 1"),
        ({"protected_fraction": -0.1}, "protected_fraction", ">= 0"),
        ({"sketch_width": 8}, "sketch_width", ">= 16"),
        ({"sketch_depth": 0}, "sketch_depth", ">= 1"),
        ({"sketch_depth": 4.0}, "sketch_depth", "must be an integer"),
        ({"reset_period": True}, "reset_period", "must be an integer"),
        ({"sketch_widht": 64}, "sketch_widht", "did you mean 'sketch_width'?"),
    ):
        with pytest.raises(PolicyConfigError) as info:
            make_cache("wtinylfu", config)
        assert info.value.problems[0].key == key
        assert fragment in str(info.value), str(info.value)
        assert "'wtinylfu'" in str(info.value)
