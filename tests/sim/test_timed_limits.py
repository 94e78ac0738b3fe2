"""Inputs the timed replay once crashed or hung on: each served, or refused up front by name.

Issue #36: a zero-length answer left decode slots counted; an empty prompt,
or a chunk smaller than a page, stalled an idle server; a cost model with
``inf`` or overflowing coefficients, ``"1"`` or ``true`` passed validation;
``--time-scale 1e308`` lost requests; huge budgets stepped
``decode_steps_before`` one count at a time; ``--chunked-prefill-size 1``
was quadratic in the prompt.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers.timed import ListWorkload, fixed_cost, request

from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModelError, load_cost_model
from radix_evict.sim.timed.limits import TimedInputError
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec


@pytest.mark.parametrize("page", [1, 16])
def test_a_zero_length_answer_is_served_and_returns_every_slot(page: int) -> None:
    reqs = [request(i, list(range(100 * i, 100 * i + 40)), [] if i % 2 else [7, 8], float(i))
            for i in range(6)]
    res = replay(ListWorkload(reqs), "lru", page_size=page, timing=TimingSpec())
    assert res.timing is not None
    assert (res.timing.finished, res.timing.refused) == (6, 0)


def test_an_empty_prompt_is_refused_naming_the_request() -> None:
    reqs = [request(0, [1, 2, 3], [4], 0.0), request(1, [], [5, 6], 1.0)]
    with pytest.raises(TimedInputError, match="request q1 has an empty prompt"):
        replay(ListWorkload(reqs), "lru", timing=TimingSpec())


def test_a_chunk_smaller_than_a_page_is_refused() -> None:
    reqs = [request(0, list(range(2000)), [1], 0.0)]
    timing = TimingSpec(scheduler=SchedulerSpec(chunked_prefill_size=256))
    with pytest.raises(TimedInputError, match="smaller than a page"):
        replay(ListWorkload(reqs), "lru", page_size=512, timing=timing)


@pytest.mark.parametrize(("prefill", "needle"), [
    ({"base_ms": float("inf"), "per_token_ms": 0.1}, "prefill.base_ms: input should be a finite"),
    ({"base_ms": 1, "per_token_ms": 1e308}, "prefill.per_token_ms: input should be less than"),
    ({"base_ms": "1", "per_token_ms": 0.1}, "prefill.base_ms: input should be a valid number"),
    ({"base_ms": 1, "per_token_ms": True}, "prefill.per_token_ms: input should be a valid number"),
])
def test_a_cost_model_that_would_overflow_or_coerce_is_refused(
        tmp_path: Path, prefill: dict[str, object], needle: str) -> None:
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"prefill": prefill,
                             "decode": {"base_ms": 1, "per_request_ms": 0.1}}))
    with pytest.raises(CostModelError, match=needle):
        load_cost_model(str(f))


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"time_scale": 1e308}, "time_scale must be positive and at most"),
    ({"time_scale": 1e40}, "time_scale must be positive and at most"),
    ({"rate": 1e-45}, "rate must be a positive number of requests per second, finite"),
])
def test_arrivals_that_outrun_the_clock_are_refused(kwargs: dict[str, float],
                                                    needle: str) -> None:
    with pytest.raises(TimedInputError, match=needle):
        ArrivalSpec(**kwargs)


@pytest.mark.parametrize("per_ktoken", [0.0, 0.039])
def test_decode_steps_before_is_bounded_whatever_the_budget(per_ktoken: float) -> None:
    m = fixed_cost(decode_base=6.0, per_request=0.02, per_ktoken=per_ktoken)
    t0 = time.perf_counter()
    for budget in (1e45, 1e25, 1e12, 3e6):
        k = m.decode_steps_before(8, 10_000, budget, 5_000)
        assert 1 <= k <= 5_000
        assert k == 5_000 or m.decode_ms(8, 10_000, k) >= budget
        assert k == 1 or m.decode_ms(8, 10_000, k - 1) < budget
    assert time.perf_counter() - t0 < 0.5


def test_a_one_token_chunk_is_linear_in_the_prompt() -> None:
    reqs = [request(i, list(range(10_000 * i, 10_000 * i + 3_000)), [1, 2], float(i))
            for i in range(2)]
    timing = TimingSpec(scheduler=SchedulerSpec(chunked_prefill_size=1))
    t0 = time.perf_counter()
    res = replay(ListWorkload(reqs), "lru", timing=timing)
    assert time.perf_counter() - t0 < 3.0  # was ~10 s: each chunk walked the whole path
    assert res.timing is not None and res.timing.finished == 2


def test_tpot_is_absent_when_no_request_had_one() -> None:
    reqs = [request(i, list(range(100 * i, 100 * i + 40)), [9], float(i)) for i in range(3)]
    res = replay(ListWorkload(reqs), "lru", timing=TimingSpec())
    assert res.timing is not None and res.timing.tpot_ms is None
    assert res.to_dict()["tpot_ms"] is None
