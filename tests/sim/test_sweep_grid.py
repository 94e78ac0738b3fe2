"""Sweep grids: the value syntax, expansion into cells, checks before anything runs, grid files."""

from __future__ import annotations

from pathlib import Path

import pytest

from radix_evict.builtin_policies.frequency import SLRUConfig
from radix_evict.sim.sweep import (
    GridParts,
    SweepGridError,
    SweepValueError,
    check_cells,
    make_grid,
    parse_count,
    parse_values,
    plan_sweep,
    read_grid_file,
)
from radix_evict.sim.sweep.values import parse_counts
from radix_evict.sim.workloads import WorkloadError


@pytest.mark.parametrize(("text", "value"), [
    ("512", 512), ("64K", 64_000), ("1M", 1_000_000), ("1.5m", 1_500_000), ("64Ki", 65_536),
    ("2Gi", 2 * 2**30), (4096, 4096),
])
def test_counts_take_suffixes(text: str | int, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["1.5", "abc", "-3", "1T", "0.0000001K", ""])
def test_bad_counts_are_refused_with_the_syntax(text: str) -> None:
    with pytest.raises(SweepValueError, match="whole number"):
        parse_count(text, "--pool-tokens")


def test_value_lists_ranges_and_json_items() -> None:
    assert parse_values("512..4096*2") == [512, 1024, 2048, 4096]
    assert parse_values("1..10+3") == [1, 4, 7, 10]
    assert parse_values("1..4") == [1, 2, 3, 4]
    assert parse_values("1,2,[3,4],{\"a\": 1},true,null,abc") == [
        1, 2, [3, 4], {"a": 1}, True, None, "abc"]
    assert parse_counts("1M..4M*2,8M", "x") == [1_000_000, 2_000_000, 4_000_000, 8_000_000]


@pytest.mark.parametrize(("text", "match"), [
    ("8..1", "below the start"), ("0..8*2", "factor"), ("1..8*1", "factor"),
    ("1..2000000", "more than"), ("1,,2", "empty item"),
])
def test_bad_ranges_say_why(text: str, match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        parse_values(text)


def test_grid_expands_every_axis_in_a_fixed_order() -> None:
    grid = make_grid(GridParts(
        policies=["lru", "slru"], vary={"slru": {"protected_threshold": [1, 2, 4]}},
        pool_tokens=[1000, 2000], workloads=["chat", "agentic"], seeds=[0, 1]))
    cells = grid.cells()
    assert len(cells) == 4 * 2 * 2 * 2
    assert grid.size_text() == "4 policy configs x 2 pool sizes x 2 workloads x 2 seeds"
    assert len({c.key for c in cells}) == len(cells)
    first = cells[0]
    assert (first.policy, first.config, first.pool_tokens, first.source.name, first.seed) == (
        "lru", None, 1000, "chat", 0)
    assert [c.config_dict for c in cells[2:8:2]] == [
        {"protected_threshold": t} for t in (1, 2, 4)]
    assert all(isinstance(c.config, SLRUConfig) for c in cells[2:8:2])  # validated, frozen
    assert cells == make_grid(GridParts(
        policies=["lru", "slru"], vary={"slru": {"protected_threshold": [1, 2, 4]}},
        pool_tokens=[1000, 2000], workloads=["chat", "agentic"], seeds=[0, 1])).cells()


def test_a_trace_runs_once_whatever_the_seeds(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n')
    grid = make_grid(GridParts(policies=["lru"], traces=[str(trace)], workloads=["chat"],
                               seeds=[0, 1, 2]))
    seeds = [(c.source.kind, c.seed) for c in grid.cells()]
    assert seeds == [("workload", 0), ("workload", 1), ("workload", 2), ("trace", None)]


def test_vary_names_its_policies_and_defaults_fill_the_rest() -> None:
    grid = make_grid(GridParts(vary={"tlru": {"threshold": [512, 1024],
                                              "next_prompt_estimate": [256]}}))
    assert [c.config_dict for c in grid.cells()] == [
        {"threshold": 512, "next_prompt_estimate": 256},
        {"threshold": 1024, "next_prompt_estimate": 256}]
    assert grid.sources[0].name == "chat"
    with pytest.raises(SweepValueError, match="not among the sweep's policies"):
        make_grid(GridParts(policies=["lru"], vary={"slru": {"protected_threshold": [1]}}))


def test_params_are_scoped_like_simulate() -> None:
    grid = make_grid(GridParts(policies=["lru"], workloads=["chat", "agentic"],
                               params=[(None, "sys_min", 300), ("chat", "convs", 7),
                                       (None, "sessions", 5)]))
    by = {s.name: s.params for s in grid.sources}
    assert by == {"chat": {"sys_min": 300, "convs": 7},
                  "agentic": {"sys_min": 300, "sessions": 5}}
    with pytest.raises(WorkloadError, match="none of the sweep's workloads"):
        make_grid(GridParts(policies=["lru"], params=[(None, "no_such_param", 1)]))
    with pytest.raises(WorkloadError, match="not one of the sweep's workloads"):
        make_grid(GridParts(policies=["lru"], params=[("agentic", "sessions", 1)]))


def test_a_bad_cell_fails_before_anything_runs_naming_the_cell() -> None:
    grid = make_grid(GridParts(
        policies=["lru", "slru"], vary={"slru": {"protected_threshold": [2, 0], "colour": [1]}},
        pool_tokens=[1000, 2000]))
    with pytest.raises(SweepGridError) as err:
        check_cells(grid.cells())
    text = str(err.value)
    assert "cell 3 of 6 (slru" in text  # the first slru cell: 2 lru cells come first
    assert "colour" in text
    assert "and 1 more cell with this config" in text
    assert {p.key for p in err.value.problems} >= {"colour"}


def test_pool_smaller_than_a_page_is_caught_up_front() -> None:
    grid = make_grid(GridParts(policies=["lru"], pool_tokens=[8], page_sizes=[16]))
    with pytest.raises(SweepGridError, match="holds no whole page of 16"):
        plan_sweep(grid)


def test_unknown_policy_is_caught_up_front() -> None:
    with pytest.raises(SweepGridError, match="lrux"):
        plan_sweep(make_grid(GridParts(policies=["lrux"])))


@pytest.mark.parametrize("suffix", [".yaml", ".toml"])
def test_grid_files_give_the_same_grid_as_the_command_line(tmp_path: Path, suffix: str) -> None:
    (tmp_path / "t.jsonl").write_text(
        '{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": [1]}\n')
    if suffix == ".yaml":
        text = """
policies:
  lru: {}
  slru: {protected_threshold: "1..4*2"}
pool_tokens: [1M, 2M]
workloads: [chat]
traces: [t.jsonl]
params: {chat.convs: 10}
seeds: "0,1"
"""
    else:
        text = """
pool_tokens = ["1M", "2M"]
workloads = ["chat"]
traces = ["t.jsonl"]
seeds = [0, 1]
[policies.lru]
[policies.slru]
protected_threshold = "1..4*2"
[params]
"chat.convs" = 10
"""
    path = tmp_path / f"grid{suffix}"
    path.write_text(text)
    from_file = make_grid(read_grid_file(path))
    from_cli = make_grid(GridParts(
        policies=["lru", "slru"], vary={"slru": {"protected_threshold": [1, 2, 4]}},
        pool_tokens=[1_000_000, 2_000_000], workloads=["chat"], traces=[str(tmp_path / "t.jsonl")],
        params=[("chat", "convs", 10)], seeds=[0, 1]))
    assert from_file.cells() == from_cli.cells()
    # the command line replaces the file's axis
    over = GridParts(pool_tokens=[5_000]).over(read_grid_file(path))
    assert {c.pool_tokens for c in make_grid(over).cells()} == {5_000}


def test_grid_file_errors_name_the_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("policy: [lru]\n")
    with pytest.raises(SweepValueError, match="unknown key 'policy'"):
        read_grid_file(path)
    path.write_text("policies: [lru\n")
    with pytest.raises(SweepValueError, match="not valid YAML"):
        read_grid_file(path)
    path.write_text("pool_tokens: 1Q\n")
    with pytest.raises(SweepValueError, match="pool_tokens"):
        read_grid_file(path)
