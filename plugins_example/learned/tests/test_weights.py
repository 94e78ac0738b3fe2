"""The weights file: a trained model written out and read back is the same model."""

from __future__ import annotations

import json
from pathlib import Path

from learned_testing import conversation_rows, write_trace
from radix_evict_learned import FEATURES, FORMAT, VERSION, LearnedPolicy

from radix_evict import load_policy
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads.trace import load_trace


def _trained(tmp_path: Path) -> LearnedPolicy:
    trace = load_trace(write_trace(tmp_path / "t.jsonl", conversation_rows(400, seed=3)),
                       block_size=16)
    policy = load_policy("learned", {"warmup": 10, "batch": 4})
    assert isinstance(policy, LearnedPolicy)
    replay(trace, policy, pool_tokens=2_000, page_size=16, timeline_points=0)
    assert policy.model.labels > 50 and any(policy.model.w)
    return policy


def test_round_trip(tmp_path: Path) -> None:
    policy = _trained(tmp_path)
    path = tmp_path / "weights.json"
    policy.save_weights(path, source="test trace")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT and data["version"] == VERSION
    assert data["source"] == "test trace"
    assert set(data["features"]) == {name for name, _ in FEATURES}
    assert all(len(data["features"][name]) == n for name, n in FEATURES)

    loaded = load_policy("learned", {"weights": str(path), "learn": False, "warmup": 0})
    assert isinstance(loaded, LearnedPolicy)
    assert loaded.model.w == policy.model.w  # exactly: JSON floats round-trip
    assert loaded.model.bias == policy.model.bias
    assert loaded._z_mean == policy._z_mean
    assert loaded.trained  # warmup 0 with a file: the file's model from the first event

    again = tmp_path / "again.json"
    loaded.save_weights(again, source="test trace")
    assert json.loads(again.read_text(encoding="utf-8")) == data


def test_frozen_weights_stay_put_and_replays_repeat(tmp_path: Path) -> None:
    policy = _trained(tmp_path)
    path = tmp_path / "weights.json"
    policy.save_weights(path)
    trace = load_trace(write_trace(tmp_path / "u.jsonl", conversation_rows(300, seed=4)),
                       block_size=16)
    rates = []
    for _ in range(2):
        frozen = load_policy("learned", {"weights": str(path), "learn": False, "warmup": 0})
        assert isinstance(frozen, LearnedPolicy)
        r = replay(trace, frozen, pool_tokens=2_000, page_size=16, timeline_points=0)
        assert frozen.model.w == policy.model.w and frozen.model.labels == policy.model.labels
        rates.append((r.hit_rate, r.evicted_tokens))
    assert rates[0] == rates[1]


def test_a_file_missing_features_starts_them_at_zero(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "bias": 0.5,
                                "features": {"hits": [0, 1, 2, 3, 4, 5]}}), encoding="utf-8")
    policy = load_policy("learned", {"weights": str(path)})
    assert isinstance(policy, LearnedPolicy)
    assert policy.model.bias == 0.5
    assert sum(policy.model.w) == 15
