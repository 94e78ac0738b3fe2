"""The cost model: files (TOML and JSON), presets, and the closed forms the replay jumps with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radix_evict.sim.timed.cost import (
    CostModelError,
    attention_pairs,
    load_cost_model,
    preset_names,
)


def test_the_presets_load_and_say_where_their_numbers_come_from() -> None:
    assert {"llama3-8b-h100", "tiny-cpu"} <= set(preset_names())
    for name in preset_names():
        m = load_cost_model(name)
        assert m.name == name and len(m.source) > 20


def test_a_json_file_and_a_toml_file_give_the_same_model(tmp_path: Path) -> None:
    data = {"name": "x", "prefill": {"base_ms": 1.5, "per_token_ms": 0.02},
            "decode": {"base_ms": 4.0, "per_request_ms": 0.1, "per_ktoken_ms": 0.03}}
    js = tmp_path / "m.json"
    js.write_text(json.dumps(data))
    tm = tmp_path / "m.toml"
    tm.write_text('name = "x"\n[prefill]\nbase_ms = 1.5\nper_token_ms = 0.02\n'
                  "[decode]\nbase_ms = 4.0\nper_request_ms = 0.1\nper_ktoken_ms = 0.03\n")
    assert load_cost_model(str(js)) == load_cost_model(str(tm))


@pytest.mark.parametrize(("text", "needle"), [
    ('{"prefill": {"base_ms": -1, "per_token_ms": 0}, "decode": {"base_ms": 1, '
     '"per_request_ms": 0}}', "prefill.base_ms"),
    ('{"prefill": {"base_ms": 1, "per_token_ms": 0}}', "decode: field required"),
    ("[1, 2]", "expected a table of keys"),
    ("{", "not valid JSON"),
])
def test_a_bad_file_names_what_is_wrong(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(text)
    with pytest.raises(CostModelError, match=needle.replace(".", r"\.")):
        load_cost_model(str(f))


def test_decode_segments_equal_their_steps_and_the_inverse_is_exact() -> None:
    m = load_cost_model("llama3-8b-h100")
    batch, context = 7, 12_345
    for steps in (1, 2, 17, 400):
        one_by_one = sum(m.decode_ms(batch, context + j * batch) for j in range(steps))
        assert m.decode_ms(batch, context, steps) == pytest.approx(one_by_one, rel=1e-12)
    for budget in (0.5, 6.0, 60.0, 5_000.0):
        k = m.decode_steps_before(batch, context, budget, 10**9)
        assert m.decode_ms(batch, context, k) >= budget
        assert k == 1 or m.decode_ms(batch, context, k - 1) < budget


def test_attention_pairs_count_every_new_tokens_context() -> None:
    for cached, new in ((0, 1), (0, 5), (10, 3), (100, 100)):
        assert attention_pairs(cached, new) == sum(cached + j for j in range(1, new + 1))
