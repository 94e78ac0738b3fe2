"""What ``reuse`` does differently from LRU, and its claim on the Mooncake traces."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
from radix_evict_costaware import ReusePolicy

from radix_evict import KVPool, PolicyConfigError, RadixCache, registry
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload, load_trace

TRACES = Path(os.environ.get("RADIX_EVICT_TRACES",
                             Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"))
CONVERSATION = TRACES / "mooncake_conversation_trace.jsonl"
SYNTHETIC = TRACES / "mooncake_synthetic_trace.jsonl"


def make_cache(policy: Any, config: Any = None, size: int = 64) -> RadixCache:
    return RadixCache(KVPool(size=size, page_size=1, device="cpu"), policy=policy,
                      policy_config=config)


def put(cache: RadixCache, tokens: list[int]) -> None:
    m = cache.match_prefix(tokens)
    new = cache.pool.alloc(len(tokens) - m.prefix_len)
    assert new is not None
    cache.insert(tokens, torch.cat([m.indices, new]), prev_prefix_len=m.prefix_len)


HISTORY = [10, 11, 12, 13]  # a conversation a later turn comes back to
ONE_OFF = [20, 21, 22, 23]  # a newer prompt nobody asks for again


@pytest.mark.parametrize(("policy", "config", "victim"), [
    ("lru", None, HISTORY),  # the history is older: LRU drops it
    ("reuse", None, ONE_OFF),  # the history was looked up: it keeps its head start
    ("reuse", {"credit": 0}, HISTORY),  # no credit: exactly LRU
])
def test_a_prefix_a_request_came_back_for_outlives_a_newer_one_off(
    policy: str, config: Any, victim: list[int]
) -> None:
    cache = make_cache(policy, config)
    put(cache, HISTORY)
    cache.match_prefix(HISTORY)  # a returning turn's lookup
    put(cache, ONE_OFF)
    cache.evict(4)
    left = {tuple(x.key.tolist()) for x in cache.iter_nodes()}
    assert tuple(victim) not in left and len(left) == 1


def test_an_evicted_reused_prefix_comes_back_with_its_credit() -> None:
    policy = ReusePolicy()
    cache = make_cache(policy)
    put(cache, HISTORY)
    cache.match_prefix(HISTORY)
    assert cache.evict(4) == 4  # reused, then evicted: a ghost
    put(cache, HISTORY)  # the conversation returns after all
    leaf = cache.match_prefix([]).last_node.children
    (node,) = leaf.values()
    assert policy.score(node) == node.last_access_time + policy.config.credit
    put(cache, ONE_OFF)  # newer, never reused
    cache.evict(4)
    assert {tuple(x.key.tolist()) for x in cache.iter_nodes()} == {tuple(HISTORY)}


def test_registered_offered_and_strict() -> None:
    assert "reuse" in registry.choices()
    with pytest.raises(PolicyConfigError, match="credit"):
        make_cache("reuse", {"credit": "2000"})
    with pytest.raises(PolicyConfigError, match="ghosts"):
        make_cache("reuse", {"ghosts": -1})


def _rate(workload: Any, policy: str, page: int) -> float:
    return replay(workload, policy, page_size=page, timeline_points=0).hit_rate


@pytest.mark.skipif(not (CONVERSATION.exists() and SYNTHETIC.exists()),
                    reason=f"Mooncake traces not found under {TRACES}")
def test_claim_beats_lru_on_a_mooncake_trace_and_costs_at_most_a_point_elsewhere() -> None:
    """Pool 4,000,000 tokens, page 512 (the traces' default pool); chat at its defaults.

    >= 5% relative over lru on at least one trace, <= 1 point below lru on the
    other and on the built-in chat workload.
    """
    conv = load_trace(CONVERSATION)
    syn = load_trace(SYNTHETIC)
    assert conv.default_pool_tokens == syn.default_pool_tokens == 4_000_000
    chat = get_workload("chat")
    rates = {
        name: (_rate(w, "lru", page), _rate(w, "reuse", page))
        for name, w, page in (("conversation", conv, 512), ("synthetic", syn, 512),
                              ("chat", chat, 1))
    }
    gains = {n: reuse / lru for n, (lru, reuse) in rates.items()}
    winner = max(("conversation", "synthetic"), key=lambda n: gains[n])
    assert gains[winner] >= 1.05, rates
    for name, (lru, reuse) in rates.items():
        if name != winner:
            assert reuse >= lru - 0.01, (name, rates)
