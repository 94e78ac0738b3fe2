"""Timed sweeps: the timing axes in the grid and the cell keys, rows equal to the timed replay,
timing columns in every format, resume, untimed files of before, simulate's checks, objectives."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli
from helpers.sweeps import timed_parts, write_cost_model

from radix_evict.sim.bound import replay_oracle
from radix_evict.sim.ceiling import infinite_pool_ceiling
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
    plan_sweep,
    read_grid_file,
    run_sweep,
)
from radix_evict.sim.sweep.schema import TIMED_FIGURES, TIMED_ROW_FIELDS
from radix_evict.sim.sweep.sources import build_workload
from radix_evict.sim.sweep.summary import best_configs, curves, summary_dict
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import load_cost_model
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.winner import ObjectiveError

Row = dict[str, Any]


# ---------------------------------------------------------------- the grid and its keys

def _key(cell: Any) -> dict[str, Any]:
    return dict(json.loads(cell.key))


def test_timing_axes_multiply_the_grid_and_each_point_is_its_own_cell(tmp_path: Path) -> None:
    model = write_cost_model(tmp_path / "gpu.toml")
    parts = GridParts(policies=["lru", "slru"], vary={"slru": {"protected_threshold": [1, 2]}},
                      pool_tokens=[1000, 2000], workloads=["chat"], seeds=[0, 1],
                      references=True, timing=True, max_running=[8, 16], rates=[1.0, 2.0, 4.0],
                      cost_models=["llama3-8b-h100", str(model)])
    grid = make_grid(parts)
    cells = grid.cells()
    points = 2 * 3 * 2  # max running x rates x cost models
    # per seed and point: 3 configs x 2 pools, the oracle at 2 pools, the (timed) ceiling
    assert len(cells) == grid.count() == 2 * points * (3 * 2 + 2 + 1) == 216
    assert len({c.key for c in cells}) == len(cells)
    lru = [c for c in cells if c.policy == "lru" and c.pool_tokens == 1000 and c.seed == 0]
    seen = {(c.timing.max_running, c.timing.rate, c.timing.cost_model.name)
            for c in lru if c.timing is not None}
    assert seen == {(m, r, n) for m in (8, 16) for r in (1.0, 2.0, 4.0)
                    for n in ("llama3-8b-h100", "my-gpu")}
    for c in lru:  # the key says the whole point: axes, the model's coefficients, the options
        timing = _key(c)["timing"]
        assert c.timing is not None
        assert (timing["max_running"], timing["rate"]) == (c.timing.max_running, c.timing.rate)
        assert {"name", "prefill", "decode"} <= set(timing["cost_model"])
        assert "source" not in timing["cost_model"]
        assert timing["cost_model"]["prefill"]["per_token_ms"] == pytest.approx(0.03)
        assert {"concurrency", "time_scale", "slo_ttft_ms", "slo_tpot_ms",
                "chunked_prefill_size"} <= set(timing)
    oracles = [c for c in cells if c.policy == "oracle"]
    assert len(oracles) == 2 * points * 2 and all(c.timing is not None for c in oracles)
    ceilings = [c for c in cells if c.policy == "ceiling"]  # the timed replay's own
    assert len(ceilings) == 2 * points and all(c.timing is not None and "timing" in _key(c)
                                               for c in ceilings)
    assert grid.size_text(cells) == ("3 policy configs x 2 pool sizes x 1 workload x 2 seeds x "
                                     "2 max-running values x 3 rates x 2 cost models")
    assert "timed: my-gpu, max running 16, rate 4/s" in cells[-2].describe()


def test_untimed_cell_keys_are_what_they_always_were() -> None:
    parts = GridParts(policies=["lru", "slru"], vary={"slru": {"protected_threshold": [2]}},
                      pool_tokens=[1000], workloads=["chat"], params=[("chat", "convs", 4)],
                      references=True)
    keys = [c.key for c in make_grid(parts).cells()]
    assert keys == [  # written by every sweep before the timed replay existed
        '{"config":null,"page_size":1,"params":{"convs":4},"policy":"lru","pool_tokens":1000,'
        '"seed":0,"workload":"chat"}',
        '{"config":{"protected_threshold":2},"page_size":1,"params":{"convs":4},"policy":"slru",'
        '"pool_tokens":1000,"seed":0,"workload":"chat"}',
        '{"config":null,"page_size":1,"params":{"convs":4},"policy":"oracle","pool_tokens":1000,'
        '"seed":0,"workload":"chat"}',
        '{"config":null,"page_size":1,"params":{"convs":4},"policy":"ceiling","pool_tokens":null,'
        '"seed":0,"workload":"chat"}',
    ]
    timed = make_grid(GridParts(**{**parts.__dict__, "timing": True})).cells()
    assert [c.key for c in timed if c.policy != "ceiling"] != keys[:3]  # a point of its own
    assert [c.key for c in timed if c.policy == "ceiling"] != keys[3:]  # the timed ceiling


def test_a_cost_models_identity_is_its_name_and_coefficients(tmp_path: Path) -> None:
    def key(model: Path, **over: Any) -> str:
        grid = make_grid(timed_parts(cost_models=[str(model)], rates=[2.0], **over))
        return str(grid.cells()[0].key)

    base = write_cost_model(tmp_path / "a.toml")
    same = write_cost_model(tmp_path / "b.toml", source="measured again, same numbers")
    changed = write_cost_model(tmp_path / "c.toml", per_token_ms=0.031)
    renamed = write_cost_model(tmp_path / "d.toml", name="other-gpu")
    assert key(base) == key(same)  # the source is a comment, not the model
    assert key(base) != key(changed)  # an edited file is another model: other cells
    assert key(base) != key(renamed)
    # spelled differently, the same point: 2 and 2.0 per second, the default chunk given
    assert (make_grid(timed_parts(rates=[2])).cells()[0].key
            == make_grid(timed_parts(rates=[2.0], chunked_prefill_size=8192)).cells()[0].key)
    with pytest.raises(SweepValueError, match="different models both named 'my-gpu'"):
        make_grid(timed_parts(cost_models=[str(base), str(changed)]))


@pytest.mark.parametrize(("over", "match"), [
    ({"timing": None}, "max_running, rate, slo_ttft: timed-replay options; set timing"),
    ({"rates": [0.0]}, "rate must be a positive number"),
    ({"max_running": [0]}, "max_running must be >= 1"),
    ({"concurrency": 4}, "a rate or a concurrency, not both"),
    ({"cost_models": ["nosuch"]}, "cost_model: cost model 'nosuch': not a preset"),
])
def test_the_core_refuses_timing_values_the_timed_replay_would(over: dict[str, Any],
                                                                match: str) -> None:
    with pytest.raises(SweepValueError, match=match):
        make_grid(timed_parts(**over))


def test_a_grid_file_takes_the_timing_keys(tmp_path: Path) -> None:
    write_cost_model(tmp_path / "gpu.toml")
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(
        "policies: [lru]\nworkloads: [chat]\nparams: {chat.convs: 4}\ntiming: true\n"
        "max_running: [8, 16]\nrate: '1..4*2'\ncost_model: [llama3-8b-h100, gpu.toml]\n"
        "time_scale: 2\nslo_ttft: 300\nslo_tpot: 50\n"
        "chunked_prefill_size: 512\nobjective: slo\n", encoding="utf-8")
    parts = read_grid_file(grid_file)
    assert parts.cost_models == ["llama3-8b-h100", str(tmp_path / "gpu.toml")]
    assert (parts.max_running, parts.rates, parts.objective) == ([8, 16], [1.0, 2.0, 4.0], "slo")
    cells = make_grid(parts.over(GridParts())).cells()
    assert len(cells) == 2 * 3 * 2
    timing = _key(cells[0])["timing"]
    assert (timing["time_scale"], timing["slo_ttft_ms"], timing["slo_tpot_ms"],
            timing["chunked_prefill_size"]) == (2.0, 300.0, 50.0, 512)
    over = GridParts(rates=[8.0]).over(parts)  # the command line replaces the file's axis
    assert {c.timing.rate for c in make_grid(over).cells()} == {8.0}  # type: ignore[union-attr]
    bad = tmp_path / "bad.yaml"
    bad.write_text("timing: true\nrate: [fast]\n", encoding="utf-8")
    with pytest.raises(SweepValueError, match=r"bad\.yaml: rate: expected numbers"):
        read_grid_file(bad)


# ---------------------------------------------------------------- rows

@pytest.fixture(scope="module")
def timed_rows() -> list[Row]:
    outcome = run_sweep(plan_sweep(make_grid(timed_parts(references=True))), local_executor(2))
    assert not outcome.failed and not outcome.interrupted
    return outcome.rows


def _spec(row: Row) -> TimingSpec:
    """The TimingSpec a user of ``replay`` writes for a row's point (not the sweep's own)."""
    return TimingSpec(cost_model=load_cost_model("llama3-8b-h100"),
                      arrivals=ArrivalSpec(rate=row["rate"], seed=row["seed"]),
                      scheduler=SchedulerSpec(max_running=row["max_running"]),
                      slo_ttft_ms=200.0)


def test_timed_rows_are_the_timed_replays(timed_rows: list[Row]) -> None:
    plan = plan_sweep(make_grid(timed_parts(references=True)))
    assert [r["cell"] for r in timed_rows] == [c.key for c in plan.cells]
    assert len(timed_rows) == 2 * (2 + 1 + 1)  # 2 rates x (2 policies, oracle, ceiling)
    wl = build_workload(plan.cells[0].source, 0)
    for row in timed_rows:
        if row["policy"] == "ceiling":  # the timed replay's, with a pool that never fills
            assert list(row) == list(TIMED_ROW_FIELDS)
            assert row["hit_rate"] == infinite_pool_ceiling(wl, 1, _spec(row)).hit_rate
            continue
        assert list(row) == list(TIMED_ROW_FIELDS)
        assert (row["max_running"], row["cost_model"]) == (16, "llama3-8b-h100")
        if row["policy"] == "oracle":
            r = replay_oracle(wl, pool_tokens=20_000, timing=_spec(row))
        else:
            r = replay(wl, row["policy"], pool_tokens=20_000, timing=_spec(row))
        t = r.timing
        assert (row["hit_rate"], row["p99_uncached"], row["evicted_tokens"]) == (
            r.hit_rate, r.p99_uncached, r.evicted_tokens)
        assert (row["ttft_p50_ms"], row["ttft_p90_ms"], row["ttft_p99_ms"], row["queue_p99_ms"],
                row["tpot_p50_ms"], row["e2e_p99_ms"]) == (
            t.ttft_ms.p50, t.ttft_ms.p90, t.ttft_ms.p99, t.queue_ms.p99, t.tpot_ms.p50,
            t.e2e_ms.p99)
        assert (row["slo_attainment"], row["throughput_rps"], row["goodput_rps"],
                row["retractions"], row["peak_queue"]) == (
            t.slo_attainment, t.throughput_rps, t.goodput_rps, t.retractions, t.peak_queue)
        assert row["config"] == r.policy_config  # the timed oracle's rounds, for the oracle
    by_rate = {(r["policy"], r.get("rate")): r.get("ttft_p99_ms") for r in timed_rows}
    assert by_rate[("lru", 2.0)] != by_rate[("lru", 8.0)]  # each point really ran its rate


def test_one_worker_and_two_give_the_same_timed_rows(timed_rows: list[Row]) -> None:
    again = run_sweep(plan_sweep(make_grid(timed_parts(references=True))), local_executor(1))
    assert [comparable(r) for r in again.rows] == [comparable(r) for r in timed_rows]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_timed_sweep_writes_the_timing_columns_and_resumes(tmp_path: Path,
                                                              suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="writing .parquet needs pyarrow")
    out = tmp_path / f"rows{suffix}"
    first = run_sweep(plan_sweep(make_grid(timed_parts(rates=[2.0])), out), local_executor(2))
    assert first.ran == 2 and not first.failed
    if suffix == ".csv":
        header = out.read_text().splitlines()[0]
        assert header == ",".join(TIMED_ROW_FIELDS)
    back = ResultFile(out).rows
    assert all(list(r) == list(TIMED_ROW_FIELDS) for r in back.values())
    assert all(r[k] is not None for r in back.values() for k in TIMED_FIGURES)
    # the same command with one more rate: the first rate's cells are kept, not run again
    plan = plan_sweep(make_grid(timed_parts()), out)
    assert len(plan.kept) == 2 and len(plan.todo) == 2
    assert {c.timing.rate for c in plan.todo} == {8.0}  # type: ignore[union-attr]
    second = run_sweep(plan, local_executor(2))
    assert second.ran == 2 and len(second.rows) == 4
    back = ResultFile(out).rows
    assert [comparable(back[r["cell"]]) for r in second.rows] == [
        comparable(r) for r in second.rows]
    assert plan_sweep(make_grid(timed_parts()), out).todo == []
    # another max running is another point: nothing of it is in the file yet
    assert len(plan_sweep(make_grid(timed_parts(max_running=[32])), out).todo) == 4


# ---------------------------------------------------------------- untimed files of before

# Written by `radix-evict sweep -p lru,slru -P chat.convs=4 --pool-tokens 20K` before the timed
# replay existed: they must resume as they are, and stay as they are.
LEGACY_JSONL = (
    '{"cell": "{\\"config\\":null,\\"page_size\\":1,\\"params\\":{\\"convs\\":4},\\"policy\\":'
    '\\"lru\\",\\"pool_tokens\\":20000,\\"seed\\":0,\\"workload\\":\\"chat\\"}", "policy": "lru", '
    '"config": null, "config_source": "none", "pool_tokens": 20000, "page_size": 1, "workload": '
    '"chat", "params": {"convs": 4}, "seed": 0, "requests": 22, "hit_rate": 0.8572378954964707, '
    '"p50_uncached": 208.0, "p90_uncached": 1948.4, "p99_uncached": 2804.209999999999, '
    '"mean_uncached": 575.5, "evicted_tokens": 0, "failed_admissions": 0, "replay_s": '
    '0.10463255399986338, "cache_s": 0.004085785000000005, "status": "ok", "error": null}\n'
    '{"cell": "{\\"config\\":null,\\"page_size\\":1,\\"params\\":{\\"convs\\":4},\\"policy\\":'
    '\\"slru\\",\\"pool_tokens\\":20000,\\"seed\\":0,\\"workload\\":\\"chat\\"}", "policy": '
    '"slru", "config": null, "config_source": "none", "pool_tokens": 20000, "page_size": 1, '
    '"workload": "chat", "params": {"convs": 4}, "seed": 0, "requests": 22, "hit_rate": '
    '0.8572378954964707, "p50_uncached": 208.0, "p90_uncached": 1948.4, "p99_uncached": '
    '2804.209999999999, "mean_uncached": 575.5, "evicted_tokens": 0, "failed_admissions": 0, '
    '"replay_s": 0.12290599199991448, "cache_s": 0.003512456999999995, "status": "ok", '
    '"error": null}\n'
)
LEGACY_CSV = "\r\n".join([
    "cell,policy,config,config_source,pool_tokens,page_size,workload,params,seed,requests,"
    "hit_rate,p50_uncached,p90_uncached,p99_uncached,mean_uncached,evicted_tokens,"
    "failed_admissions,replay_s,cache_s,status,error",
    '"{""config"":null,""page_size"":1,""params"":{""convs"":4},""policy"":""lru"",'
    '""pool_tokens"":20000,""seed"":0,""workload"":""chat""}",lru,,none,20000,1,chat,'
    '"{""convs"": 4}",0,22,0.8572378954964707,208.0,1948.4,2804.209999999999,575.5,0,0,'
    '0.11514275399986218,0.0032549519999999924,ok,',
    '"{""config"":null,""page_size"":1,""params"":{""convs"":4},""policy"":""slru"",'
    '""pool_tokens"":20000,""seed"":0,""workload"":""chat""}",slru,,none,20000,1,chat,'
    '"{""convs"": 4}",0,22,0.8572378954964707,208.0,1948.4,2804.209999999999,575.5,0,0,'
    '0.1171064849997947,0.0034519890000000077,ok,',
]) + "\r\n"


def _legacy_parts(pools: list[int]) -> GridParts:
    return GridParts(policies=["lru", "slru"], workloads=["chat"], params=[("chat", "convs", 4)],
                     pool_tokens=pools)


@pytest.mark.parametrize(("suffix", "text"), [(".jsonl", LEGACY_JSONL), (".csv", LEGACY_CSV)])
def test_untimed_result_files_of_before_still_resume_and_keep_their_columns(
        tmp_path: Path, suffix: str, text: str) -> None:
    out = tmp_path / f"rows{suffix}"
    out.write_bytes(text.encode())
    plan = plan_sweep(make_grid(_legacy_parts([20_000])), out)
    assert plan.todo == [] and len(plan.kept) == 2
    assert run_sweep(plan, local_executor(2)).ran == 0
    plan = plan_sweep(make_grid(_legacy_parts([20_000, 50_000])), out)
    assert len(plan.kept) == 2 and {c.pool_tokens for c in plan.todo} == {50_000}
    assert run_sweep(plan, local_executor(2)).ran == 2
    after = out.read_bytes().decode()
    assert after.startswith(text)  # not a byte of the old rows changed
    added = after[len(text):]
    if suffix == ".jsonl":
        assert all(list(json.loads(line)) == list(ROW_FIELDS) for line in added.splitlines())
    else:
        rows = list(csv.reader(io.StringIO(after)))
        legacy = [k for k in ROW_FIELDS if k != "via"]  # a CSV of before via keeps its header
        assert rows[0] == legacy and all(len(r) == len(legacy) for r in rows)
        assert len(rows) == 5


def test_a_timed_sweep_does_not_append_to_an_untimed_csv(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    out.write_bytes(LEGACY_CSV.encode())
    with pytest.raises(ResultFileError, match=r"untimed sweep's file.*another --out"):
        plan_sweep(make_grid(timed_parts()), out)
    assert out.read_bytes() == LEGACY_CSV.encode()


# ---------------------------------------------------------------- the summary's objective

def _row(policy: str, config: dict[str, Any], hit: float, ttft: float, slo: float) -> Row:
    return {"cell": f"{policy}{config}", "policy": policy, "config": config, "pool_tokens": 1000,
            "page_size": 1, "workload": "chat", "params": {}, "seed": 0, "max_running": None,
            "rate": 2.0, "cost_model": "m", "hit_rate": hit, "p99_uncached": 100.0,
            "ttft_p99_ms": ttft, "slo_attainment": slo, "status": "ok"}


def test_the_best_config_follows_the_objective() -> None:
    rows = [_row("slru", {"protected_threshold": 1}, 0.80, 900.0, 0.70),
            _row("slru", {"protected_threshold": 2}, 0.70, 300.0, 0.75),
            _row("slru", {"protected_threshold": 3}, 0.60, 400.0, 0.95)]
    best = {o: best_configs(rows, o)[0].config for o in ("hit-rate", "ttft-p99", "slo")}
    assert best == {"hit-rate": {"protected_threshold": 1}, "ttft-p99": {"protected_threshold": 2},
                    "slo": {"protected_threshold": 3}}
    (score,) = best_configs(rows, "ttft-p99")
    assert (score.point, score.ttft_p99_ms) == ("m, rate 2/s", 300.0)
    (curve,) = curves(rows, "ttft-p99")
    assert curve.ttft_points == [(1000, 300.0)]
    summary = summary_dict(rows, "slo")
    assert summary["objective"] == "slo" and summary["best_configs"][0]["slo_attainment"] == 0.95
    untimed = [{k: v for k, v in r.items() if k not in ("cost_model", "ttft_p99_ms")}
               for r in rows]
    assert "objective" not in summary_dict(untimed)
    with pytest.raises(ObjectiveError, match="ranks timed replays"):
        best_configs(untimed, "ttft-p99")


# ---------------------------------------------------------------- the command line

def test_cli_timed_sweep_shows_ttft_next_to_hit_rate_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    args = ["sweep", "--timing", "-p", "lru,slru", "-P", "chat.convs=12", "--pool-tokens",
            "20K", "--max-running", "16", "--slo-ttft", "200", "--out", str(out)]
    r = run_cli(*args, "--rate", "2")
    assert r.exit_code == 0, r.output
    assert "x 1 max-running value x 1 rate x 1 cost model = 2 cells" in r.stderr
    assert "TTFT p99" in r.stdout and "SLO met" in r.stdout
    assert "by hit-rate" in r.stdout
    again = run_cli(*args, "--rate", "2,8", "--objective", "ttft-p99", "--json")
    assert again.exit_code == 0, again.output
    assert "2 already in" in again.stderr and "2 to run" in again.stderr
    data = json.loads(again.stdout)
    assert (data["cells"], data["ran"], data["kept"]) == (4, 2, 2)
    assert data["objective"] == "ttft-p99" and data["summary"]["objective"] == "ttft-p99"
    assert {r["rate"] for r in data["rows"]} == {2.0, 8.0}
    assert all(r["ttft_p99_ms"] > 0 for r in data["rows"])
    assert out.read_text().splitlines()[0] == ",".join(TIMED_ROW_FIELDS)


@pytest.mark.parametrize("args", [
    ["--cost-model", "nosuch"],
    ["--cost-model", "missing.toml"],
    ["--rate", "0"],
    ["--rate", "1", "--concurrency", "2"],
    ["--time-scale", "0"],
    ["--objective", "slo"],
])
def test_timing_options_are_checked_as_simulate_checks_them(args: list[str]) -> None:
    """Each list value goes through simulate's own checks: same message, same exit code."""
    option = args[0] if args[0] != "--objective" else "--slo-ttft"
    swept = run_cli("sweep", "--timing", "-P", "chat.convs=4", "--dry-run", *args)
    simulated = run_cli("simulate", "--timing", "-P", "chat.convs=4", *args)
    assert swept.exit_code == simulated.exit_code != 0, swept.output
    assert option in swept.stderr
    assert swept.stderr.strip().splitlines()[-1] == simulated.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("args", "match"), [
    (["--timing", "--rate", "fast"], "--rate: expected numbers, got 'fast'"),
    (["--timing", "--rate", "2,inf"], "--rate: expected numbers, got 'inf'"),
    (["--timing", "--rate", "2,-1"], "--rate must be positive, got -1"),
    (["--timing", "--max-running", "8,0"], "--max-running must be >= 1, got 0"),
    (["--timing", "--max-running", "many"], "--max-running: 'many' is not a whole number"),
    (["--rate", "2", "--max-running", "8"], "--max-running, --rate: timed-replay options; "
                                            "add --timing"),
    (["--objective", "ttft-p99"], "--objective ttft-p99 ranks timed replays; add --timing"),
])
def test_bad_timing_axes_are_usage_errors_naming_the_option(args: list[str], match: str) -> None:
    r = run_cli("sweep", "-P", "chat.convs=4", "--dry-run", *args)
    assert r.exit_code == 2, r.output
    assert match in r.stderr
