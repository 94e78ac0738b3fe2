"""The tiny engine: cached runs compute what uncached runs compute, from live K/V only."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from radix_evict import KVPool, registry
from radix_evict.engine import (
    Engine,
    EngineRequest,
    EngineResult,
    TinyConfig,
    TinyDecoder,
    build_engine,
    requests_from_workload,
    run_engine_replay,
    tiny_chat_requests,
)

CFG = TinyConfig(vocab_size=128, d_model=32, layers=2, heads=2, ffn=64)
POOL = 192  # a few requests' worth: eviction on most admissions
CONFIGS: dict[str, Any] = {"tlru": {"threshold": 48, "next_prompt_estimate": 8}}
PUBLIC = registry.choices()


def _requests(seed: int = 0, forced: bool = False) -> list[EngineRequest]:
    return tiny_chat_requests(
        conversations=6, turns=3, systems=2, system_len=24, user_len=(4, 14),
        output_len=(2, 7), vocab_size=CFG.vocab_size, seed=seed, forced_output=forced,
    )


def _run(policy: str | None, page_size: int = 1, max_running: int = 2,
         pool_factory: Any = None, requests: list[EngineRequest] | None = None,
         ) -> tuple[EngineResult, Engine]:
    engine = build_engine(
        policy or "lru", CONFIGS.get(policy or ""), pool_tokens=POOL, page_size=page_size,
        device="cpu", use_cache=policy is not None, model_config=CFG, max_running=max_running,
        record_logits=True, pool_factory=pool_factory,
    )
    return engine.run(requests if requests is not None else _requests()), engine


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Any:
    """The tiny model is all per-op overhead: extra threads only contend."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def baseline() -> EngineResult:
    """The cache-disabled run everything is compared with."""
    res, _ = _run(None)
    assert res.dropped == 0 and res.prefill_tokens == res.prompt_tokens
    return res


@pytest.fixture(scope="module")
def dense_logits(baseline: EngineResult) -> list[torch.Tensor]:
    """Pool-free causal attention over prompt + output: an oracle independent of slots."""
    model = TinyDecoder(CFG, seed=0)
    out = []
    for req, gen in zip(_requests(), baseline.generated, strict=True):
        assert gen is not None
        toks = torch.tensor(list(req.prompt) + gen[:-1])
        out.append(model.forward_dense(toks)[len(req.prompt) - 1 :])
    return out


def _assert_same(res: EngineResult, ref: EngineResult) -> None:
    assert res.dropped == 0
    assert res.generated == ref.generated
    for got, want in zip(res.logits, ref.logits, strict=True):
        assert got is not None and want is not None
        assert torch.isfinite(got).all()
        assert (got - want).abs().max().item() <= 1e-4


def test_baseline_matches_dense_oracle(baseline: EngineResult,
                                       dense_logits: list[torch.Tensor]) -> None:
    for got, want in zip(baseline.logits, dense_logits, strict=True):
        assert got is not None
        assert got.shape == want.shape
        assert (got - want).abs().max().item() <= 1e-4


@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("policy", PUBLIC)
def test_cached_run_matches_uncached(policy: str, page_size: int, baseline: EngineResult,
                                     dense_logits: list[torch.Tensor]) -> None:
    res, engine = _run(policy, page_size=page_size)
    _assert_same(res, baseline)
    for got, want in zip(res.logits, dense_logits, strict=True):
        assert got is not None and (got - want).abs().max().item() <= 1e-4
    assert res.cached_tokens > 0, "no prefix was reused: the test proves nothing"
    assert res.evicted_tokens > 0, "the pool never ran short: the test proves nothing"
    cache = engine.cache
    assert cache is not None and cache.protected_size() == 0
    assert engine.pool.available_size() + cache.evictable_size() == POOL


def test_batch_size_does_not_change_results(baseline: EngineResult) -> None:
    for max_running in (1, 4):
        res, _ = _run("lru", max_running=max_running)
        _assert_same(res, baseline)


class PoisonPool(KVPool):
    """A pool whose free slots hold NaN: at start and after every free."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.poisoned = 0
        for buf in (*self.k_buffer, *self.v_buffer):
            buf.fill_(float("nan"))

    def free(self, indices: torch.Tensor) -> None:
        super().free(indices)
        self._poison(indices)

    def _poison(self, indices: torch.Tensor) -> None:
        for buf in (*self.k_buffer, *self.v_buffer):
            buf[indices] = float("nan")
        self.poisoned += int(indices.numel())


@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("policy", PUBLIC)
def test_poisoned_free_slots_change_nothing(policy: str, page_size: int,
                                            baseline: EngineResult) -> None:
    res, engine = _run(policy, page_size=page_size, max_running=3, pool_factory=PoisonPool)
    _assert_same(res, baseline)
    assert res.evicted_tokens > 0
    assert isinstance(engine.pool, PoisonPool) and engine.pool.poisoned >= res.evicted_tokens


def test_poison_is_detectable() -> None:
    """The poison test can fail: reading one freed slot turns the logits to NaN."""
    model = TinyDecoder(CFG, seed=0)
    pool = PoisonPool(16, device="cpu", layers=CFG.layers, heads=CFG.heads,
                      head_dim=CFG.head_dim, dtype=torch.float32)
    row = pool.alloc(8)
    assert row is not None
    toks = torch.arange(8)
    assert torch.isfinite(model.prefill(toks[:5], 0, row, pool)).all()
    pool.free(row[2:3])  # a prefix slot goes stale
    assert torch.isnan(model.prefill(toks[5:], 5, row, pool)).all()


@pytest.mark.parametrize("policy", PUBLIC)
def test_prefill_work_equals_uncached_count(policy: str) -> None:
    res, _ = _run(policy, page_size=1)
    # The model's own counter, the engine's tally and the cache's counters agree.
    assert res.prefill_tokens == res.uncached_tokens
    assert res.prefill_tokens == res.prompt_tokens - int(res.cache_stats["hit_tokens"])
    assert 0 < res.prefill_tokens < res.prompt_tokens


def test_prefill_runs_only_the_tail() -> None:
    """A repeated prompt runs exactly one token (the last) through prefill."""
    prompt = tuple(range(1, 41))
    reqs = [EngineRequest(prompt, 3), EngineRequest(prompt, 3), EngineRequest((*prompt, 7), 2)]
    res, engine = _run("lru", requests=reqs, max_running=1)
    assert res.prefill_tokens == 40 + 1 + 1
    assert engine.model.prefill_tokens == res.prefill_tokens
    assert res.generated[0] == res.generated[1]


@pytest.mark.parametrize(("page_size", "max_running", "session"), [(1, 1, None), (4, 1, None),
                                                                   (1, 4, 7), (1, 4, None)])
def test_next_turn_reuses_generated_tokens(page_size: int, max_running: int,
                                           session: int | None) -> None:
    """A follow-up quoting the greedy answer hits everything whose K/V exists,
    provided it waits for that answer (one at a time, or the same session)."""
    first = EngineRequest(tuple(range(3, 30)), 6, session=session)
    solo, _ = _run(None, requests=[first])
    answer = solo.generated[0]
    assert answer is not None
    follow = EngineRequest(first.prompt + tuple(answer) + (9, 8, 7), 3, session=session)
    res, _ = _run("lru", page_size=page_size, requests=[first, follow], max_running=max_running)
    ref, _ = _run(None, requests=[first, follow])
    _assert_same(res, ref)
    with_kv = len(first.prompt) + len(answer) - 1  # the last answer token was never fed
    if max_running > 1 and session is None:  # ran side by side: nothing to reuse yet
        with_kv = 0
    assert res.hits == [0, with_kv // page_size * page_size]
    assert res.prefill_tokens == len(first.prompt) + len(follow.prompt) - res.hits[1]


def test_forced_output_is_fed_and_still_exact() -> None:
    reqs = _requests(seed=3, forced=True)
    res, _ = _run("lru", requests=reqs)
    ref, _ = _run(None, requests=reqs)
    _assert_same(res, ref)
    assert res.generated == [list(r.output or ()) for r in reqs]
    assert res.prefill_tokens < ref.prefill_tokens


def test_request_larger_than_pool_is_dropped() -> None:
    reqs = [EngineRequest(tuple(i % 100 for i in range(POOL + 10)), 2), EngineRequest((1, 2, 3), 2)]
    res, _ = _run("lru", requests=reqs)
    assert res.dropped == 1 and res.completed == 1
    assert res.generated[0] is None and res.generated[1] is not None


def test_run_engine_replay_reports() -> None:
    res = run_engine_replay(_requests(), "lru", pool_tokens=POOL, device="cpu",
                            model_config=CFG)
    d = res.to_dict()
    json.dumps(d)
    assert d["policy"] == "lru" and d["completed"] == len(_requests())
    assert 0 < d["ttft_ms_p50"] <= d["ttft_ms_p90"] <= d["ttft_ms_p99"]
    assert d["prefill_tokens"] == d["uncached_tokens"]
    off = run_engine_replay(_requests(), use_cache=False, pool_tokens=POOL, device="cpu",
                            model_config=CFG)
    assert off.policy == "no-cache" and off.prefill_tokens == off.prompt_tokens


def test_requests_from_workload_maps_vocab() -> None:
    reqs = requests_from_workload(
        [{"prompt": [5, 130, 300], "out": [129, 2], "prio": 2},
         {"tokens": [1], "max_new_tokens": 4}],
        vocab_size=128,
    )
    assert reqs[0].prompt == (5, 2, 44) and reqs[0].output == (1, 2)
    assert reqs[0].priority == 2 and reqs[0].max_new_tokens == 2
    assert reqs[1].output is None and reqs[1].max_new_tokens == 4


def test_bad_request_rejected() -> None:
    with pytest.raises(ValueError):
        EngineRequest((), 1)
    with pytest.raises(ValueError):
        EngineRequest((1,), 2, output=(1,))
