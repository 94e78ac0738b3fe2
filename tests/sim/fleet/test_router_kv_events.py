"""kv_events: Dynamo's cost (weighted prefill blocks + decode blocks), ties and softmax draws."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
import pytest

from radix_evict.sim.fleet.router import RoutedRequest
from radix_evict.sim.fleet.routers.kv_events import KvEventsConfig, KvEventsRouter, softmax_pick

KEY = tuple(range(64))


@dataclass
class Replica:
    """A replica view with a fixed cached prefix (in tokens) for every key."""

    index: int
    cached: int = 0
    pending_prefill_tokens: int = 0
    active_kv_tokens: int = 0
    in_flight: int = 0
    waiting: int = 0
    running: int = 0

    def cached_prefix(self, key: Sequence[Hashable]) -> int:
        return min(self.cached, len(key))


def req(key: Sequence[Hashable] = KEY) -> RoutedRequest:
    return RoutedRequest(rid=0, arrival=0.0, key=key, session=None,
                         prompt_tokens=len(key), output_tokens=8)


def route(replicas: list[Replica], seed: int = 0, **settings: Any) -> int:
    r = KvEventsRouter(KvEventsConfig(**settings), replicas=len(replicas), seed=seed)
    return r.route(req(), replicas)


def test_defaults_are_dynamos() -> None:
    c = KvEventsConfig()
    assert (c.overlap_score_weight, c.router_temperature, c.block_size) == (1.0, 0.0, 16)
    with pytest.raises(pydantic.ValidationError, match="temperature"):
        KvEventsConfig(temperature=1.0)
    with pytest.raises(pydantic.ValidationError, match="block_size"):
        KvEventsConfig(block_size=0)


def test_cost_is_weighted_prefill_blocks_plus_decode_blocks() -> None:
    empty = Replica(0)  # prefill 64 tokens = 4 blocks; decode 0 + 4 new blocks -> 8
    warm = Replica(1, cached=48, active_kv_tokens=160)  # prefill 1 block; decode 10 + 1 -> 12
    r = KvEventsRouter(KvEventsConfig(), replicas=2)
    assert r.costs(req(), [empty, warm]) == [8.0, 12.0]
    assert route([empty, warm]) == 0
    heavy = KvEventsRouter(KvEventsConfig(overlap_score_weight=4.0), replicas=2)
    assert heavy.costs(req(), [empty, warm]) == [20.0, 15.0]  # overlap now outweighs load
    assert route([empty, warm], overlap_score_weight=4.0) == 1


def test_zero_weight_is_pure_decode_load() -> None:
    cold_idle = Replica(0, active_kv_tokens=0)
    warm_busy = Replica(1, cached=64, active_kv_tokens=16 * 5)
    assert route([cold_idle, warm_busy], overlap_score_weight=0.0) == 0  # 4 < 5


def test_overlap_counts_whole_blocks_only() -> None:
    r = KvEventsRouter(KvEventsConfig(), replicas=1)
    # 47 cached tokens are 2 whole blocks: prefill 64 - 32 = 32 tokens (2 blocks), decode 2
    assert r.costs(req(), [Replica(0, cached=47)]) == [4.0]


def test_queued_prefill_counts_against_a_replica() -> None:
    queued = Replica(0, pending_prefill_tokens=128)  # (128 + 64) / 16 + 4 = 16
    warm = Replica(1, cached=48, active_kv_tokens=160)  # 12
    assert route([queued, warm]) == 1


def test_active_tokens_round_up_to_blocks() -> None:
    r = KvEventsRouter(KvEventsConfig(), replicas=1)
    assert r.costs(req(), [Replica(0, active_kv_tokens=17)]) == [4.0 + 2 + 4]


def test_ties_at_zero_temperature_are_a_seeded_draw_among_the_least() -> None:
    replicas = [Replica(0), Replica(1, active_kv_tokens=16), Replica(2)]
    picks = Counter(route(replicas, seed=s) for s in range(200))
    assert set(picks) == {0, 2}  # never the costlier one
    assert [route(replicas, seed=7) for _ in range(5)] == [route(replicas, seed=7)] * 5


def test_softmax_follows_the_normalised_costs() -> None:
    rng = random.Random(1)
    draws = Counter(softmax_pick([0.0, 10.0], 1.0, rng) for _ in range(4000))
    # costs / range = [0, 1]: p(0) = 1 / (1 + e^-1) = 0.731
    assert 0.70 < draws[0] / 4000 < 0.76
    hot = Counter(softmax_pick([0.0, 10.0], 100.0, rng) for _ in range(4000))
    assert 0.47 < hot[0] / 4000 < 0.53  # a high temperature is near uniform
    cold = Counter(softmax_pick([0.0, 10.0], 0.01, rng) for _ in range(500))
    assert cold[0] == 500
    flat = Counter(softmax_pick([3.0, 3.0, 3.0], 1.0, rng) for _ in range(3000))
    assert set(flat) == {0, 1, 2}


def test_softmax_is_reproducible_from_the_seed() -> None:
    replicas = [Replica(0), Replica(1, cached=32), Replica(2, active_kv_tokens=64)]

    def picks(seed: int) -> list[int]:
        config = KvEventsConfig(router_temperature=0.5)
        r = KvEventsRouter(config, replicas=3, seed=seed)
        return [r.route(req(), replicas) for _ in range(40)]

    assert picks(3) == picks(3)
    assert picks(3) != picks(4)
    assert len(set(picks(3))) > 1
