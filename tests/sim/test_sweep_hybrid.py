"""Sweeps through a hybrid model's cache (issue #39): ``model_arch``, ``kv_memory`` and the two
split ratios are axes; keys gain ``hybrid`` only when given (files of before resume); rows carry
the architecture, the split, the reusable and the full-KV hit rates, equal to the hybrid
replay's own; bad values refused naming the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from radix_evict.sim.hybrid_replay import build_spec, replay_hybrid
from radix_evict.sim.models.presets import layout_from
from radix_evict.sim.sweep import (
    GridParts,
    ResultFile,
    SweepValueError,
    local_executor,
    make_grid,
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.schema import HYBRID_AXES, HYBRID_FIGURES, ROW_FIELDS, columns
from radix_evict.sim.sweep.sources import build_workload

SMALL: dict[str, Any] = {"policies": ["lru", "lfu"], "params": [("chat", "convs", 12)],
                         "page_sizes": [16]}
HYBRID: dict[str, Any] = {"model_archs": ["gpt-oss-120b", "qwen3-next-80b-a3b"],
                          "kv_memories": ["2GiB"], "swa_ratios": [0.25, 0.8],
                          "mamba_ratios": [0.9]}


def test_axes_expand_by_kind_and_keys_gain_hybrid_only_when_given() -> None:
    plain = make_grid(GridParts(**SMALL)).cells()
    grid = make_grid(GridParts(**SMALL, **HYBRID))
    cells = grid.cells()
    assert len(plain) == 2 and len(cells) == 2 * 3  # 2 gpt-oss splits + 1 qwen3-next split
    assert all("hybrid" not in json.loads(c.key) for c in plain)  # the key files of before have
    keys = [json.loads(c.key)["hybrid"] for c in cells]
    assert {"model_arch": "gpt-oss-120b", "kv_memory": "2GiB", "swa_ratio": 0.25} in keys
    assert {"model_arch": "qwen3-next-80b-a3b", "kv_memory": "2GiB", "mamba_ratio": 0.9} in keys
    for c in cells:
        stripped = json.loads(c.key)
        del stripped["hybrid"]
        assert stripped in [json.loads(p.key) for p in plain]
    assert grid.size_text(cells).endswith("x 3 model splits")
    assert "gpt-oss-120b, kv 2GiB, swa ratio 0.25" in cells[0].describe()


def test_rows_carry_the_split_and_both_hit_rates_as_the_hybrid_replay_gives(
        tmp_path: Path) -> None:
    parts = GridParts(**{**SMALL, "policies": ["lfu"]}, model_archs=["gpt-oss-120b"],
                      kv_memories=["2GiB"], swa_ratios=[0.25])
    out = tmp_path / "rows.jsonl"
    rows = run_sweep(plan_sweep(make_grid(parts), out), local_executor(1)).rows
    assert len(rows) == 1 and rows[0]["status"] == "ok", rows
    row = rows[0]
    workload = build_workload(make_grid(parts).cells()[0].source, 0)
    spec = build_spec(layout_from("gpt-oss-120b"), kv_memory="2GiB", pool_tokens=None,
                      default_tokens=workload.default_pool_tokens, page_size=16,
                      swa_ratio=0.25, mamba_ratio=None)
    run = replay_hybrid(workload, spec, "lfu")
    assert (row["model_arch"], row["kv_memory"], row["swa_full_tokens_ratio"]) == (
        "gpt-oss-120b", "2GiB", 0.25)
    assert row["mamba_full_memory_ratio"] is None
    assert row["hit_rate"] == run.hit_rate and row["full_hit_rate"] == run.full_hit_rate
    assert row["full_hit_rate"] >= row["hit_rate"]
    assert (row["full_pool_tokens"], row["swa_pool_tokens"]) == (spec.pools.full_tokens,
                                                                 spec.pools.swa_tokens)
    assert set(HYBRID_AXES + HYBRID_FIGURES) <= set(row)
    again = plan_sweep(make_grid(parts), out, write=False)  # the rerun resumes: nothing to do
    assert again.todo == [] and len(again.kept) == 1
    assert len(ResultFile(out).rows) == 1


def test_a_timed_hybrid_cell_has_p99_ttft() -> None:
    parts = GridParts(**{**SMALL, "policies": ["lru"]}, model_archs=["qwen3-next-80b-a3b"],
                      kv_memories=["2GiB"], timing=True, time_scale=6.0)
    rows = run_sweep(plan_sweep(make_grid(parts)), local_executor(1)).rows
    assert rows[0]["status"] == "ok", rows
    assert rows[0]["ttft_p99_ms"] > 0 and rows[0]["mamba_full_memory_ratio"] == 0.9


def test_columns_without_hybrid_are_unchanged() -> None:
    assert columns() == ROW_FIELDS
    assert not set(HYBRID_AXES + HYBRID_FIGURES) & set(columns(timed=True, host=True))


@pytest.mark.parametrize(("over", "match"), [
    ({"model_archs": ["no-such-model"]}, "model_arch no-such-model"),
    ({"model_archs": ["gpt-oss-120b"], "kv_memories": ["40 parsecs"]}, "kv_memory 40 parsecs"),
    ({"kv_memories": ["40GiB"]}, "kv_memory: hybrid-model options"),
    ({"model_archs": ["gpt-oss-120b"], "swa_ratios": [0.0]}, "swa_full_tokens_ratio"),
    ({"model_archs": ["gpt-oss-120b"], "host_tokens": [8000], "write_policies": ["write_back"]},
     "model_arch with host tier: write_policy 'write_back'"),
])
def test_bad_hybrid_values_are_refused_naming_the_key(over: dict[str, Any], match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        make_grid(GridParts(**{**SMALL, **over}))


def test_a_grid_file_gives_the_hybrid_axes(tmp_path: Path) -> None:
    f = tmp_path / "grid.yaml"
    f.write_text("policies: [lru]\nmodel_arch: [gpt-oss-120b, qwen3-next-80b-a3b]\n"
                 "kv_memory: 40GiB\nswa_full_tokens_ratio: [0.25, 0.8]\n"
                 "mamba_full_memory_ratio: '0.9,2'\n", encoding="utf-8")
    parts = read_grid_file(f)
    assert parts.model_archs == ["gpt-oss-120b", "qwen3-next-80b-a3b"]
    assert parts.kv_memories == ["40GiB"] and parts.mamba_ratios == [0.9, 2.0]
    assert len(make_grid(parts).cells()) == 4
    bad = tmp_path / "bad.yaml"
    bad.write_text("model_arch: [1]\n", encoding="utf-8")
    with pytest.raises(SweepValueError, match="model_arch: expected names"):
        read_grid_file(bad)


def test_each_model_has_its_own_best_configs() -> None:
    from radix_evict.sim.sweep.summary import best_configs, workload_label

    parts = GridParts(**SMALL, **HYBRID)
    rows = run_sweep(plan_sweep(make_grid(parts)), local_executor(1)).rows
    labels = {workload_label(r) for r in rows}
    assert len(labels) == 3 and all(" on " in w for w in labels)
    assert 'chat{"convs":12} on gpt-oss-120b, kv 2GiB, swa ratio 0.25' in labels
    best = best_configs(rows)
    assert {(b.workload, b.policy) for b in best} == {(w, p) for w in labels
                                                      for p in ("lru", "lfu")}


def test_a_fleet_cell_on_a_hybrid_model_is_the_hybrid_fleet_replay() -> None:
    from radix_evict.sim.configs import PolicyRun
    from radix_evict.sim.fleet.hybrid import replay_hybrid_fleet
    from radix_evict.sim.fleet.replay import FleetSpec

    parts = GridParts(**{**SMALL, "policies": ["lru"]}, model_archs=["qwen3-next-80b-a3b"],
                      kv_memories=["1GiB"], timing=True, replicas=[2],
                      routers=[("cache_aware", None)])
    grid = make_grid(parts)
    (cell,) = grid.cells()
    assert json.loads(cell.key)["hybrid"] == {"model_arch": "qwen3-next-80b-a3b",
                                              "kv_memory": "1GiB"}
    (row,) = run_sweep(plan_sweep(grid), local_executor(1)).rows
    assert row["status"] == "ok", row
    workload = build_workload(cell.source, 0)
    spec = cell.hybrid.spec(None, workload.default_pool_tokens, 16)  # type: ignore[union-attr]
    timing = cell.timing_spec()
    assert timing is not None
    result = replay_hybrid_fleet(workload, PolicyRun("lru"), spec, timing=timing,
                                 fleet=FleetSpec(2, "cache_aware"))
    assert (row["hit_rate"], row["full_hit_rate"]) == (result.hit_rate, result.full_hit_rate)
    assert row["ttft_p99_ms"] == result.fleet.ttft_ms.p99 and row["replicas"] == 2
    assert row["mamba_states"] == spec.pools.mamba_states
    assert set(columns(timed=True, fleet=True, hybrid=True)) <= set(row)


def test_a_hybrid_cell_with_a_host_tier_is_the_hybrid_host_replay() -> None:
    from radix_evict.cache.host_tier import HostTierSpec

    parts = GridParts(**{**SMALL, "policies": ["lru"]}, model_archs=["gpt-oss-120b"],
                      pool_tokens=[6000], host_tokens=[0, 12000])
    rows = run_sweep(plan_sweep(make_grid(parts)), local_executor(1)).rows
    bare, tier = sorted(rows, key=lambda r: r.get("host_tokens") or 0)
    assert bare["status"] == tier["status"] == "ok", rows
    workload = build_workload(make_grid(parts).cells()[0].source, 0)
    spec = build_spec(layout_from("gpt-oss-120b"), kv_memory=None, pool_tokens=6000,
                      default_tokens=workload.default_pool_tokens, page_size=16,
                      swa_ratio=None, mamba_ratio=None)
    run = replay_hybrid(workload, spec, "lru", None, HostTierSpec(tokens=12000))
    assert tier["hit_rate"] == run.hit_rate and tier["host_hit_rate"] == run.host_hit_rate
    assert tier["host_tokens"] == 12000 and tier["written_tokens"] > 0
    assert tier["hit_rate"] > bare["hit_rate"] and bare.get("write_policy") is None
