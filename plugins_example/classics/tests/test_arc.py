"""What ``arc`` does: T1 and T2 as deadlines, and a target p that ghost hits move."""

from __future__ import annotations

import pytest
from classic_reference import ARC, LRU, Radix, hit_rate, zipf_trace
from classics_testing import evict_order, lookup, make_cache, node_of, pin, put
from radix_evict_classics import ARCConfig, ARCPolicy

from radix_evict import PolicyConfigError, registry

A, B, C = [10, 11], [20, 21], [30, 31]


def test_a_lookup_moves_a_node_to_t2_and_a_new_leaf_starts_in_t1() -> None:
    policy = ARCPolicy()
    cache = make_cache(policy)
    put(cache, A)
    assert policy.list_of(node_of(cache, A)) == "T1"
    lookup(cache, A)
    assert policy.list_of(node_of(cache, A)) == "T2"
    assert policy.sizes["T2"] == 2 and policy.sizes["T1"] == 0


def test_the_target_p_adapts_on_ghost_hits() -> None:
    """A B1 ghost hit (T1 evicted too soon) raises p; a B2 ghost hit lowers it."""
    policy = ARCPolicy()
    cache = make_cache(policy)
    pin(cache)  # the directory holds about a cache of ghosts: make it bigger than A
    assert policy.target_fraction == 0.0  # ARC starts at p = 0
    put(cache, A)
    assert cache.evict(2) == 2  # A, from T1: a B1 ghost
    assert policy.sizes["B1"] == 2
    put(cache, A)  # A comes back: B1 hit
    assert policy.ghost_hits == [1, 0]
    assert policy.list_of(node_of(cache, A)) == "T2"
    raised = policy.target_fraction
    assert raised > 0.0
    assert policy.target == pytest.approx(raised * 18)  # p in tokens: the cache held 18
    assert cache.evict(2) == 2  # A again, now from T2: a B2 ghost
    put(cache, A)  # B2 hit
    assert policy.ghost_hits == [1, 1]
    assert policy.target_fraction < raised


def test_with_p_at_zero_t1_goes_before_an_older_t2_node() -> None:
    for policy, config, victim in (("arc", None, 1), ("lru", None, 0),
                                   ("arc", {"initial_target": 1.0}, 0)):
        cache = make_cache(policy, config)
        put(cache, A)
        lookup(cache, A)  # A: seen twice, T2
        put(cache, B)  # B, C: seen once, T1
        put(cache, C)
        assert evict_order(cache, [A, B, C], 1) == [victim], (policy, config)


def test_without_ghosts_nothing_adapts() -> None:
    policy = ARCPolicy(ARCConfig(ghost_capacity=0.0))
    cache = make_cache(policy)
    pin(cache)
    put(cache, A)
    cache.evict(2)
    put(cache, A)
    assert policy.ghost_hits == [0, 0] and policy.target_fraction == 0.0
    assert policy.list_of(node_of(cache, A)) == "T1"


@pytest.mark.parametrize(("c", "alpha"), [(50, 1.0), (200, 0.8)])
def test_a_flat_cache_tracks_textbook_arc(c: int, alpha: float) -> None:
    """Unit items under the root: within a point of ARC's Fig. 4, with a directory of ~c."""
    trace = zipf_trace(8000, 2000, alpha, seed=c)
    policy = ARCPolicy()
    ours = hit_rate(Radix(c, policy), trace)
    assert abs(ours - hit_rate(ARC(c), trace)) < 0.01
    assert ours > hit_rate(LRU(c), trace) + 0.03
    sizes = policy.sizes
    assert sizes["T1"] + sizes["T2"] == c
    assert sizes["T1"] + sizes["B1"] <= c and sizes["B1"] + sizes["B2"] <= c
    assert sum(policy.ghost_hits) > 0


def test_registered_offered_and_strict() -> None:
    assert "arc" in registry.choices()
    assert registry.check_choice("arc").distribution == "radix-evict-classics"
    for config, key, fragment in (
        ({"initial_target": 1.5}, "initial_target", "<= 1"),
        ({"initial_target": "0"}, "initial_target", "must be a number"),
        ({"ghost_capacity": -1.0}, "ghost_capacity", ">= 0"),
        ({"ghost_capacity": float("nan")}, "ghost_capacity", "finite"),
        ({"ghost_capcity": 1.0}, "ghost_capcity", "did you mean 'ghost_capacity'?"),
    ):
        with pytest.raises(PolicyConfigError) as info:
            make_cache("arc", config)
        assert info.value.problems[0].key == key
        assert fragment in str(info.value), str(info.value)
        assert "'arc'" in str(info.value)
