"""Sweeps with a host tier (HiCache): host axes in the grid and the cell keys (one-tier keys
unchanged), rows equal to the two-tier replay, host columns in every format, one-tier files of
before, timed host sweeps, the summary per host point and the curves over host size."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.sweeps import (
    ONE_TIER_CSV,
    ONE_TIER_JSONL,
    host_parts,
    timed_parts,
    write_cost_model,
)

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.sweep import (
    ROW_FIELDS,
    GridParts,
    ResultFile,
    ResultFileError,
    SweepValueError,
    comparable,
    local_executor,
    make_grid,
    make_grids,
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.check import merge_notes
from radix_evict.sim.sweep.host_axes import host_config_dict
from radix_evict.sim.sweep.schema import (
    HOST_FIGURES,
    HOST_ROW_FIELDS,
    TIMED_HOST_ROW_FIELDS,
    TIMED_ROW_FIELDS,
)
from radix_evict.sim.sweep.sources import build_workload
from radix_evict.sim.sweep.summary import best_configs, curves, host_curves, summary_dict
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import load_cost_model
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec

Row = dict[str, Any]


def _key(cell: Any) -> dict[str, Any]:
    return dict(json.loads(cell.key))


# ---------------------------------------------------------------- the grid and its keys

def test_host_axes_multiply_the_grid_and_each_point_is_its_own_cell() -> None:
    grid = make_grid(host_parts(host_policies=[None, "lfu"], references=True))
    cells = grid.cells()
    # 2 policies x (no host tier + 2 sizes x 2 write policies x 2 host policies), oracle, ceiling
    assert len(cells) == 2 * (1 + 2 * 2 * 2) + 2 == 20
    assert grid.count() >= len(cells)
    assert len({c.key for c in cells}) == len(cells)
    tiered = [c for c in cells if c.host is not None]
    assert len(tiered) == 16
    seen = {(c.host.tokens, c.host.write_policy, c.host.policy) for c in tiered}
    assert seen == {(t, w, p) for t in (8_000, 16_000) for w in ("write_through", "write_back")
                    for p in (None, "lfu")}
    for c in tiered:  # the key says the whole point
        assert c.host is not None
        host = _key(c)["host"]
        assert host == {"tokens": c.host.tokens, "ratio": None,
                        "write_policy": c.host.write_policy,
                        "write_threshold": 0 if c.host.write_policy == "write_back" else 1,
                        "policy": c.host.policy, "config": None}
    for c in cells:  # the references and the 0-token cells are one-tier
        if c.host is None:
            assert "host" not in _key(c)
    assert [c.policy for c in cells if c.host is None] == ["lru", "lfu", "oracle", "ceiling"]
    assert grid.size_text(cells) == ("2 policy configs x 1 pool size x 1 workload x 1 seed x "
                                     "3 host sizes x 2 write policies x 2 host policies")
    assert "host 16,000 tokens, write_back, host policy lfu" in tiered[-1].describe()
    notes = merge_notes(grid, cells)
    assert any("--host-tokens 0 is no host tier" in n for n in notes)


def test_one_tier_cell_keys_are_what_they_always_were() -> None:
    """A cell without a host tier (none asked, or 0 tokens, or less than a page) keeps the key
    every sweep wrote before the host tier existed, byte for byte."""
    before = [json.loads(line)["cell"] for line in ONE_TIER_JSONL.splitlines()]
    one_tier = GridParts(policies=["lru", "lfu"], pool_tokens=[8_000], workloads=["chat"],
                         params=[("chat", "convs", 12)])
    assert [c.key for c in make_grid(one_tier).cells()] == before
    assert [c.key for c in make_grid(host_parts(host_tokens=[0])).cells()] == before
    mixed = make_grid(host_parts()).cells()
    assert [c.key for c in mixed if c.host is None] == before
    assert all(c.key not in before for c in mixed if c.host is not None)
    # a host tier of less than a page is no host tier, as in the replay
    paged = make_grid(host_parts(host_tokens=[100], page_sizes=[512], pool_tokens=[8_192]))
    assert all(c.host is None and "host" not in _key(c) for c in paged.cells())
    assert any("less than a page of 512" in n for n in merge_notes(paged, paged.cells()))


def test_a_host_points_identity_is_its_replay() -> None:
    def keys(**over: Any) -> list[str]:
        return [c.key for c in make_grid(host_parts(**{"host_tokens": [8_000], **over})).cells()
                if c.host is not None]

    # a threshold equal to the write policy's own is the same point; write_back takes none
    assert keys(write_policies=["write_through"]) == keys(write_policies=["write_through"],
                                                          write_threshold=1)
    assert keys(write_policies=["write_through"]) != keys(write_policies=["write_through"],
                                                          write_threshold=3)
    wb = make_grid(host_parts(host_tokens=[8_000], write_policies=["write_back", "write_through"],
                              write_threshold=3)).cells()
    assert {(c.host.write_policy, c.host.threshold) for c in wb if c.host} == {
        ("write_back", 0), ("write_through", 3)}
    # the host policy's config is part of it; "device" is the default
    assert keys(host_policies=["device"]) == keys()
    assert keys(host_policies=["slru"]) != keys(host_policies=["slru"],
                                                host_configs={"slru": {"protected_threshold": 3}})
    # ratios spelled two ways are one point; tokens are whole pages of the cell's page
    assert keys(host_tokens=None, hicache_ratios=[2]) == keys(host_tokens=None,
                                                              hicache_ratios=[2.0])
    grid = make_grid(host_parts(host_tokens=[8_000, 8_100], page_sizes=[512],
                                pool_tokens=[8_192], write_policies=["write_back"]))
    paged = grid.cells()
    assert len(paged) == 2 and {c.host.tokens for c in paged if c.host} == {7_680}
    assert "--host-tokens 8,000, 8,100 are all 7,680 tokens in whole pages of 512" in \
        merge_notes(grid, paged)[0]
    cell = paged[0]
    assert cell.host_spec() == HostTierSpec(tokens=7_680, write_policy="write_back")


@pytest.mark.parametrize(("over", "match"), [
    ({"host_tokens": None}, "write_policy: host-tier options; set host_tokens or hicache_ratio"),
    ({"hicache_ratios": [2.0]}, "host_tokens and hicache_ratio both size the host tier"),
    ({"host_tokens": None, "hicache_ratios": [0.0]}, "ratio 0.0 must be a number above 0"),
    ({"write_policies": ["write_trough"]}, "write_policy 'write_trough' is not one of"),
    ({"write_policies": ["write_back"], "write_threshold": 2}, "write_threshold is for write_"),
    ({"host_policies": ["lfru"]}, "host_policy 'lfru'"),
    ({"host_policies": ["slru"], "host_configs": {"slru": {"protected_treshold": 2}}},
     "protected_treshold"),
    ({"host_configs": {"slru": {}}}, "host_config.slru: not among the host policies"),
    ({"host_tokens": [-1]}, "host_tokens: expected whole numbers >= 0"),
])
def test_the_core_refuses_host_values_the_replay_would(over: dict[str, Any], match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        make_grid(host_parts(**over))


def test_a_timed_host_sweep_needs_a_transfer_table(tmp_path: Path) -> None:
    model = write_cost_model(tmp_path / "gpu.toml")  # no [transfer] table
    with pytest.raises(SweepValueError, match=r"cost_model my-gpu: no \[transfer\] table"):
        make_grid(timed_parts(cost_models=[str(model)], host_tokens=[8_000]))
    assert make_grid(timed_parts(host_tokens=[8_000])).host is not None  # the preset has one


def test_a_grid_file_takes_the_host_keys(tmp_path: Path) -> None:
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(
        "policies: [lru]\nworkloads: [chat]\nparams: {chat.convs: 12}\npool_tokens: 8K\n"
        "hicache_ratio: [1, 2]\nwrite_policy: write_through,write_back\n"
        "host_policy: [device, slru]\nhost_config: {slru: {protected_threshold: 3}}\n"
        "write_threshold: 2\n"
        "grids:\n  - {}\n  - {host_tokens: '0,8K..16K*2', write_policy: [write_back]}\n",
        encoding="utf-8")
    parts = read_grid_file(grid_file)
    assert (parts.hicache_ratios, parts.write_policies, parts.host_policies,
            parts.write_threshold) == ([1.0, 2.0], ["write_through", "write_back"],
                                       ["device", "slru"], 2)
    assert parts.host_configs == {"slru": {"protected_threshold": 3}}
    with pytest.raises(SweepValueError, match="write_threshold is for write_through"):
        make_grids(parts.over(GridParts()))  # the second grid writes back only
    parts.grids[1].write_policies.append("write_through_selective")  # type: ignore[index,union-attr]
    first, second = make_grids(parts.over(GridParts()))
    assert first.host is not None and first.host.ratios == (1.0, 2.0)
    # a grid's host_tokens replaces the shared hicache_ratio: one axis, the host size
    assert second.host is not None and second.host.tokens == (0, 8_000, 16_000)
    assert second.host.ratios == ()
    assert second.host.write_policies == ("write_back", "write_through_selective")
    slru = [c for c in first.cells() if c.host is not None and c.host.policy == "slru"]
    assert {json.dumps(host_config_dict(c.host)) for c in slru} == {'{"protected_threshold": 3}'}
    assert {c.host.threshold for c in first.cells() if c.host} == {0, 2}
    # the command line's --host-tokens replaces the file's ratios in every grid
    over = make_grids(GridParts(host_tokens=[4_000]).over(parts))
    assert all(g.host is not None and g.host.tokens == (4_000,) and not g.host.ratios
               for g in over)
    bad = tmp_path / "bad.yaml"
    bad.write_text("host_tokens: [1M]\nhost_config: {slru: 3}\n", encoding="utf-8")
    with pytest.raises(SweepValueError, match=r"bad\.yaml: host_config: expected a mapping"):
        read_grid_file(bad)


# ---------------------------------------------------------------- rows

@pytest.fixture(scope="module")
def host_rows() -> list[Row]:
    outcome = run_sweep(plan_sweep(make_grid(host_parts(references=True))), local_executor(2))
    assert not outcome.failed and not outcome.interrupted
    return outcome.rows


def test_host_rows_are_the_two_tier_replays(host_rows: list[Row]) -> None:
    plan = plan_sweep(make_grid(host_parts(references=True)))
    assert [r["cell"] for r in host_rows] == [c.key for c in plan.cells]
    wl = build_workload(plan.cells[0].source, 0)
    for row in host_rows:
        if row["policy"] in ("oracle", "ceiling") or row.get("write_policy") is None:
            assert list(row) == list(ROW_FIELDS)  # one tier: the columns it always had
            if row["policy"] in ("lru", "lfu"):
                one = replay(wl, row["policy"], pool_tokens=8_000)
                assert (row["hit_rate"], row["evicted_tokens"]) == (one.hit_rate,
                                                                     one.evicted_tokens)
            continue
        assert list(row) == list(HOST_ROW_FIELDS)
        r = replay(wl, row["policy"], pool_tokens=8_000,
                   host=HostTierSpec(tokens=row["host_tokens"],
                                     write_policy=row["write_policy"]))
        h = r.host
        assert h is not None
        assert (row["hit_rate"], row["p99_uncached"], row["evicted_tokens"]) == (
            r.hit_rate, r.p99_uncached, r.evicted_tokens)
        assert {k: row[k] for k in HOST_FIGURES} == {
            "device_hit_rate": h.device_hit_rate, "host_hit_rate": h.host_hit_rate,
            "miss_rate": h.miss_rate, "written_tokens": h.written_tokens,
            "loaded_tokens": h.loaded_tokens, "host_evicted_tokens": h.host_evicted_tokens,
            "host_evictions": h.host_evictions, "reclaimed_tokens": h.reclaimed_tokens,
            "dropped_tokens": h.dropped_tokens, "write_failed_tokens": h.write_failed_tokens,
            "load_back_failed_tokens": h.load_back_failed_tokens, "copy_wait_s": h.copy_wait_s}
        assert row["write_threshold"] == h.write_threshold
        assert row["host_policy"] is None and h.host_policy == row["policy"]
    hit = {(r["policy"], r.get("host_tokens"), r.get("write_policy")): r["hit_rate"]
           for r in host_rows}
    assert hit[("lru", 16_000, "write_back")] > hit[("lru", None, None)]  # the host tier helps


def test_a_ratio_cells_row_has_its_real_host_size() -> None:
    (row,) = run_sweep(plan_sweep(make_grid(host_parts(
        policies=["lru"], host_tokens=None, hicache_ratios=[1.5],
        write_policies=["write_back"]))), local_executor(1)).rows
    assert (row["hicache_ratio"], row["host_tokens"]) == (1.5, 12_001)  # SGLang: +1 page
    assert json.loads(row["cell"])["host"]["ratio"] == 1.5


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_host_sweep_writes_the_host_columns_and_resumes(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="writing .parquet needs pyarrow")
    out = tmp_path / f"rows{suffix}"
    parts = host_parts(policies=["lru"], host_tokens=[0, 8_000])
    first = run_sweep(plan_sweep(make_grid(parts), out), local_executor(2))
    assert first.ran == 3 and not first.failed
    if suffix == ".csv":
        assert out.read_text().splitlines()[0] == ",".join(HOST_ROW_FIELDS)
    back = ResultFile(out).rows
    assert [comparable(back[r["cell"]]) for r in first.rows] == [
        comparable(r) for r in first.rows]
    assert sorted(len(r) for r in back.values()) == [len(ROW_FIELDS)] + [
        len(HOST_ROW_FIELDS)] * 2
    # one more host size: only its cells run
    plan = plan_sweep(make_grid(host_parts(policies=["lru"])), out)
    assert len(plan.kept) == 3 and {c.host.tokens for c in plan.todo if c.host} == {16_000}
    assert run_sweep(plan, local_executor(2)).ran == 2
    assert plan_sweep(make_grid(host_parts(policies=["lru"])), out).todo == []


@pytest.mark.parametrize(("suffix", "text"), [(".jsonl", ONE_TIER_JSONL),
                                              (".csv", ONE_TIER_CSV)])
def test_one_tier_result_files_of_before_resume_byte_for_byte(tmp_path: Path, suffix: str,
                                                              text: str) -> None:
    out = tmp_path / f"rows{suffix}"
    out.write_bytes(text.encode())
    plan = plan_sweep(make_grid(host_parts(host_tokens=[0])), out)
    assert plan.todo == [] and len(plan.kept) == 2  # --host-tokens 0: the cells of before
    assert run_sweep(plan, local_executor(2)).ran == 0
    assert out.read_bytes() == text.encode()
    if suffix == ".csv":  # its columns have no place for the host figures: left as it is
        with pytest.raises(ResultFileError, match=r"one-tier sweep's file.*another --out"):
            plan_sweep(make_grid(host_parts()), out)
        assert out.read_bytes() == text.encode()
        return
    plan = plan_sweep(make_grid(host_parts()), out)
    assert len(plan.kept) == 2 and all(c.host is not None for c in plan.todo)
    assert run_sweep(plan, local_executor(2)).ran == 8
    after = out.read_bytes().decode()
    assert after.startswith(text)  # not a byte of the old rows changed
    added = [json.loads(line) for line in after[len(text):].splitlines()]
    assert all(list(r) == list(HOST_ROW_FIELDS) for r in added)


def test_a_csv_of_one_tier_and_host_rows_reads_back_each_kind(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    rows = run_sweep(plan_sweep(make_grid(host_parts(policies=["lru"], host_tokens=[0, 8_000],
                                                     write_policies=["write_back"])), out),
                     local_executor(1)).rows
    table = list(csv.reader(io.StringIO(out.read_text())))
    assert table[0] == list(HOST_ROW_FIELDS) and len(table) == 3
    one_tier = dict(zip(table[0], table[1], strict=True))
    assert one_tier["write_policy"] == "" and one_tier["host_hit_rate"] == ""
    back = ResultFile(out).rows
    assert [list(back[r["cell"]]) for r in rows] == [list(ROW_FIELDS), list(HOST_ROW_FIELDS)]


def test_a_timed_host_sweep_times_the_copies(tmp_path: Path) -> None:
    parts = timed_parts(policies=["lru"], rates=[4.0], host_tokens=[0, 8_000],
                        write_policies=["write_back"], pool_tokens=[8_000])
    out = tmp_path / "rows.csv"
    outcome = run_sweep(plan_sweep(make_grid(parts), out), local_executor(2))
    assert outcome.ran == 2 and not outcome.failed
    assert out.read_text().splitlines()[0] == ",".join(TIMED_HOST_ROW_FIELDS)
    one, two = outcome.rows
    assert list(one) == list(TIMED_ROW_FIELDS) and list(two) == list(TIMED_HOST_ROW_FIELDS)
    wl = build_workload(make_grid(parts).cells()[0].source, 0)
    spec = TimingSpec(cost_model=load_cost_model("llama3-8b-h100"),
                      arrivals=ArrivalSpec(rate=4.0, seed=0), slo_ttft_ms=200.0,
                      scheduler=SchedulerSpec(max_running=16))
    r = replay(wl, "lru", pool_tokens=8_000, timing=spec,
               host=HostTierSpec(tokens=8_000, write_policy="write_back"))
    assert r.timing is not None and r.host is not None
    assert (two["ttft_p99_ms"], two["host_hit_rate"], two["copy_wait_s"]) == (
        r.timing.ttft_ms.p99, r.host.host_hit_rate, r.host.copy_wait_s)
    assert two["copy_wait_s"] > 0  # write_back's writes block the step that evicts


# ---------------------------------------------------------------- the summary

def test_the_summary_reads_each_host_point_on_its_own(host_rows: list[Row]) -> None:
    best = best_configs(host_rows)
    hosts = {b.host for b in best}
    assert hosts == {None, "host 8,000 tokens, write_through", "host 8,000 tokens, write_back",
                     "host 16,000 tokens, write_through", "host 16,000 tokens, write_back"}
    assert len(best) == 2 * len(hosts)
    by = {(b.host, b.policy): b.hit_rate for b in best}
    row = next(r for r in host_rows if (r["policy"], r.get("host_tokens"), r.get("write_policy"))
               == ("lfu", 16_000, "write_back"))
    assert by[("host 16,000 tokens, write_back", "lfu")] == row["hit_rate"]
    assert {c.host for c in curves(host_rows)} == hosts
    tiers = host_curves(host_rows)
    assert {(c.policy, c.line) for c in tiers} == {
        (p, w) for p in ("lru", "lfu") for w in ("write_through", "write_back")}
    for c in tiers:  # host size 0 is the one-tier row, on every line
        assert [h for h, _ in c.points] == [0, 8_000, 16_000]
        assert (c.pool_tokens, c.page_size) == (8_000, 1)
        zero = next(r for r in host_rows if r["policy"] == c.policy
                    and r.get("write_policy") is None and r["pool_tokens"] == 8_000)
        assert c.points[0] == (0, zero["hit_rate"]) == c.device_points[0]
        for h, hit in c.points[1:]:
            row = next(r for r in host_rows if (r["policy"], r.get("host_tokens"),
                                                r.get("write_policy")) == (c.policy, h, c.line))
            assert hit == row["hit_rate"]
    summary = summary_dict(host_rows)
    assert len(summary["host_curves"]) == 4
    assert summary["host_curves"][0]["host_tokens"] == [0, 8_000, 16_000]
    one_tier = [r for r in host_rows if r.get("write_policy") is None]
    assert "host_curves" not in summary_dict(one_tier)


def test_a_host_policy_is_a_line_of_its_own() -> None:
    parts = host_parts(policies=["lru"], host_tokens=[0, 8_000], write_policies=["write_back"],
                       host_policies=["device", "lfu"])
    rows = run_sweep(plan_sweep(make_grid(parts)), local_executor(2)).rows
    assert {r.get("host_policy") for r in rows} == {None, "lfu"}
    assert {c.line for c in host_curves(rows)} == {"write_back",
                                                   "write_back, host policy lfu"}
