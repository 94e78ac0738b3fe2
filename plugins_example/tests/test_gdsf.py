"""What gdsf does differently from LRU, through a real radix cache."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from radix_evict_costaware import GreedyDualPolicy, recompute_cost_per_token

from radix_evict import KVPool, PolicyConfigError, RadixCache, registry
from radix_evict.testing import insert_as_request


def make_cache(policy: str, config: Any = None, size: int = 512) -> RadixCache:
    return RadixCache(KVPool(size=size, page_size=1, device="cpu"), policy=policy,
                      policy_config=config)


def put(cache: RadixCache, tokens: list[int]) -> None:
    """Insert as an engine would: reuse the cached prefix, allocate the rest."""
    insert_as_request(cache, tokens)


LONG = list(range(1000, 1200))  # a 200-token conversation history
DEEP_TAIL = [*LONG, 7, 7, 7, 7]  # its latest turn: 4 tokens deep in context
SHALLOW = [1, 2, 3, 4]  # an unrelated short prompt, inserted later


@pytest.mark.parametrize(("policy", "config", "victim"), [
    ("lru", None, "deep"),  # the deep tail is older: LRU drops it
    ("gdsf", {"credit": 16.0, "attention_span": 64}, "shallow"),  # dearer to recompute: kept
    ("gdsf", {"credit": 0.0}, "deep"),  # no credit: exactly LRU
])
def test_deep_tails_outlive_cheap_shallow_prompts(policy: str, config: Any, victim: str) -> None:
    cache = make_cache(policy, config)
    put(cache, LONG)
    put(cache, DEEP_TAIL)
    put(cache, SHALLOW)
    assert cache.evict(1) == 4
    # match_prefix of one probe would refresh it, so check the victim alone first
    probe = {"deep": DEEP_TAIL, "shallow": SHALLOW}[victim]
    assert cache.match_prefix(probe).prefix_len < len(probe)


def test_frequently_hit_leaves_outlive_newer_one_hit_leaves() -> None:
    hot, cold = [5, 6, 7, 8], [9, 10, 11, 12]
    for policy, expect_hot_kept in (("lru", False), ("gdsf", True)):
        cache = make_cache(policy, {"credit": 16.0} if policy == "gdsf" else None)
        put(cache, hot)
        put(cache, hot)
        put(cache, hot)  # three requests used it
        put(cache, cold)  # one request, more recent
        cache.evict(1)
        assert (cache.match_prefix(hot).prefix_len == 4) is expect_hot_kept, policy


def in_tree(cache: RadixCache, node: Any) -> bool:
    """Whether ``node`` still hangs off the root (no match_prefix: that would refresh it)."""
    while node.parent is not None:
        if node not in node.parent.children.values():
            return False
        node = node.parent
    return node is cache.match_prefix([]).last_node


def test_credit_runs_out_with_time() -> None:
    """A dear leaf is not kept forever: it goes before traffic newer than its credit."""
    cache = make_cache("gdsf", {"credit": 2.0, "attention_span": 64}, size=4096)
    put(cache, LONG)
    put(cache, DEEP_TAIL)
    tail = cache.match_prefix(DEEP_TAIL).last_node
    newer = [[50_000 + 10 * i, 1, 2, 3] for i in range(40)]
    for p in newer:
        put(cache, p)
    evictions = 0
    while in_tree(cache, tail):
        cache.evict(1)
        evictions += 1
    assert 1 < evictions < 10  # a few older cheap prompts first, then the tail
    # the newest prompts all stayed
    assert all(cache.match_prefix(p).prefix_len == 4 for p in newer[10:])


def test_cost_per_token_grows_with_depth() -> None:
    class Node:
        def __init__(self, prefix_len: int, num_tokens: int) -> None:
            self.prefix_len, self.num_tokens = prefix_len, num_tokens

    assert recompute_cost_per_token(Node(4, 4), 8) == pytest.approx(1 + 1.5 / 8)  # type: ignore[arg-type]
    assert recompute_cost_per_token(Node(204, 4), 8) > recompute_cost_per_token(Node(4, 4), 8)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=10), min_size=1, max_size=25),
       st.integers(1, 20))
def test_zero_credit_evicts_exactly_like_lru(prompts: list[list[int]], amount: int) -> None:
    caches = [make_cache("lru", size=512), make_cache("gdsf", {"credit": 0}, size=512)]
    for cache in caches:
        for p in prompts:
            put(cache, p)
        cache.evict(amount)
    left = [sorted(n.prefix_len for n in c.iter_nodes()) for c in caches]
    assert left[0] == left[1]
    assert caches[0].total_size() == caches[1].total_size()


def test_registered_and_offered_with_fifo() -> None:
    assert {"gdsf", "fifo"} <= set(registry.choices())
    spec = registry.check_choice("gdsf")
    assert spec.policy is GreedyDualPolicy
    assert spec.distribution == "radix-evict-costaware"
    assert registry.check_choice("fifo").name == "fifo"


@pytest.mark.parametrize(("config", "key", "fragment"), [
    ({"credit": -1.0}, "credit", ">= 0"),
    ({"credit": "16"}, "credit", "must be a number"),
    ({"credit": float("nan")}, "credit", "finite"),
    ({"attention_span": 0}, "attention_span", ">= 1"),
    ({"attention_span": 512.0}, "attention_span", "must be an integer"),
    ({"frequency": 1}, "frequency", "true or false"),
    ({"atention_span": 512}, "atention_span", "did you mean 'attention_span'?"),
])
def test_strict_config(config: dict[str, Any], key: str, fragment: str) -> None:
    with pytest.raises(PolicyConfigError) as info:
        make_cache("gdsf", config)
    assert info.value.problems[0].key == key
    assert fragment in str(info.value)
    assert "'gdsf'" in str(info.value)
