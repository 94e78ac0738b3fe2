"""cache_aware: sglang-router 0.3.2's thresholds, load count, eviction clock and config."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pydantic
import pytest

from radix_evict.sim.fleet.router import RoutedRequest
from radix_evict.sim.fleet.routers.cache_aware import (
    CacheAwareConfig,
    CacheAwareRouter,
    ids_text,
)


def req(key: Sequence[Hashable], rid: int = 0, arrival: float = 0.0) -> RoutedRequest:
    return RoutedRequest(rid=rid, arrival=arrival, key=key, session=None,
                         prompt_tokens=len(key), output_tokens=1)


def router(workers: int = 2, **settings: Any) -> CacheAwareRouter:
    return CacheAwareRouter(CacheAwareConfig(**settings), replicas=workers)


def test_defaults_are_the_launchers() -> None:
    c = CacheAwareConfig()
    assert (c.cache_threshold, c.balance_abs_threshold, c.balance_rel_threshold,
            c.eviction_interval_secs, c.max_tree_size) == (0.3, 64, 1.5, 60, 2**26)


def test_config_is_strict_and_names_the_key() -> None:
    with pytest.raises(pydantic.ValidationError, match="cache_treshold"):
        CacheAwareConfig(cache_treshold=0.5)
    with pytest.raises(pydantic.ValidationError, match="cache_threshold"):
        CacheAwareConfig(cache_threshold=1.5)
    with pytest.raises(pydantic.ValidationError, match="balance_rel_threshold"):
        CacheAwareConfig(balance_rel_threshold=0.9)
    with pytest.raises(pydantic.ValidationError, match="max_tree_size"):
        CacheAwareConfig(max_tree_size=0)


def test_one_at_a_time_everything_goes_to_the_first_worker() -> None:
    """Loads are all 0 at each choice: a low match goes to the first least-loaded worker."""
    r = router(4)
    for i, text in enumerate(["alpha beta", "gamma", "alpha beta delta", "zeta"]):
        choice = r.route(req(text, i), ())
        r.on_finish(req(text, i), choice)
        assert choice == 0


def test_low_match_goes_to_the_least_loaded_worker() -> None:
    r = router(3)
    assert r.route(req("aaaa"), ()) == 0
    assert r.route(req("bbbb"), ()) == 1
    assert r.route(req("cccc"), ()) == 2
    r.on_finish(req("bbbb"), 1)
    assert r.route(req("dddd"), ()) == 1


def test_match_rate_must_be_strictly_above_the_threshold() -> None:
    r = router(2, cache_threshold=0.5)
    r.tree.insert("abcd", 1)
    assert r.choose("abcdwxyz") == 0  # 4/8 == 0.5: not above -> least loaded (0)
    r = router(2, cache_threshold=0.5)
    r.tree.insert("abcd", 1)
    assert r.choose("abcdwxy") == 1  # 4/7 > 0.5 -> the matched tenant


def test_high_match_follows_the_tree_even_to_a_busier_worker() -> None:
    r = router(2)
    r.tree.insert("system prompt: be brief", 1)
    r.load = [0, 10]
    assert r.route(req("system prompt: be brief. hi"), ()) == 1
    assert r.load == [0, 11]


@pytest.mark.parametrize(("loads", "unbalanced"), [
    ([0, 65], True),  # 65 > 64 and 65 > 0 * 1.5
    ([0, 64], False),  # the absolute gap must exceed 64
    ([100, 165], True),  # 65 > 64 and 165 > 150
    ([200, 265], False),  # 65 > 64 but 265 <= 300: the relative test fails
    ([130, 195], False),  # 195 == 130 * 1.5: not above
    ([129, 194], True),
])
def test_both_balance_thresholds_must_be_exceeded(loads: list[int], unbalanced: bool) -> None:
    r = router(2)
    r.load = list(loads)
    assert r.unbalanced() is unbalanced


def test_unbalanced_load_overrides_the_tree_and_still_records_the_text() -> None:
    r = router(2)
    r.tree.insert("shared context", 1)
    r.load = [0, 65]
    assert r.route(req("shared context"), ()) == 0  # shortest queue despite a full match
    assert set(r.tree.root.children["s"].tenants) == {0, 1}  # it went in under worker 0 too


def test_least_loaded_ties_go_to_the_first_worker() -> None:
    r = router(4)
    r.load = [3, 1, 1, 2]
    assert r.least_loaded() == 1


def test_on_finish_never_drives_a_load_below_zero() -> None:
    r = router(2)
    r.on_finish(req("x"), 1)
    assert r.load == [0, 0]


def test_eviction_runs_on_the_virtual_clock() -> None:
    r = router(1, eviction_interval_secs=10, max_tree_size=4, cache_threshold=0.9)
    r.route(req("aaaaaaaa", 0, arrival=0.0), ())
    r.route(req("bbbbbbbb", 1, arrival=5.0), ())
    assert r.tree.size[0] == 16  # no tick before t = 10
    r.route(req("c", 2, arrival=10.0), ())  # the tick at 10 trims first, then "c" goes in
    assert r.tree.size[0] == 1
    r.route(req("dddddddd", 3, arrival=15.0), ())
    assert r.tree.size[0] == 9  # next tick at 20
    r.route(req("e", 4, arrival=35.0), ())  # ticks at 20 and 30: one trim covers both
    assert r.tree.size[0] == 1
    assert r._next_eviction == 40


def test_token_keys_match_by_token_and_ids_text_by_character() -> None:
    tokens = [12, 345, 6]
    assert ids_text(tokens) == "12 345 6"
    by_token = router(2, cache_threshold=0.5)
    by_token.tree.insert((12, 345, 7), 1)
    assert by_token.route(req(tokens), ()) == 1  # 2 of 3 tokens > 0.5
    by_text = router(2, cache_threshold=0.5, match_on="ids_text")
    by_text.tree.insert("12 345 7", 1)
    assert by_text.route(req(tokens), ()) == 1  # "12 345 " is 7 of 8 characters
    short = router(2, cache_threshold=0.5, match_on="ids_text")
    short.tree.insert("1 2 3 4 5", 1)
    assert short.route(req([1, 2, 99999]), ()) == 0  # "1 2 " is 4 of 9 characters
    same_by_token = router(2, cache_threshold=0.5)
    same_by_token.tree.insert((1, 2, 3, 4, 5), 1)
    assert same_by_token.route(req([1, 2, 99999]), ()) == 1  # 2 of 3 tokens


def test_replicas_must_be_positive() -> None:
    with pytest.raises(ValueError, match="cache_aware"):
        CacheAwareRouter(CacheAwareConfig(), replicas=0)
