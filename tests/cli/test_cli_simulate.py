"""CLI: ``radix-evict simulate`` on small workloads, traces, the matrix and the tiny engine."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli, simulate_json
from prometheus_client.parser import text_string_to_metric_families

from radix_evict import registry
from radix_evict.builtin_policies.tlru import derive_config as derive_tlru
from radix_evict.sim.recommend import recommend
from radix_evict.sim.workloads import get_workload

PUBLIC = ["lru", "lfu", "slru", "priority", "tlru"]
SMALL = ["--param", "convs=30", "--pool-tokens", "6000"]  # small chat that must evict
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("simulate", *args)



# ----------------------------------------------------------------------------- one workload


def test_default_policies_figures_and_recommendation() -> None:
    data = simulate_json(*SMALL)
    assert data["mode"] == "workload" and data["policies"] == PUBLIC
    rows = data["results"]
    assert [r["label"] for r in rows] == PUBLIC
    for r in rows:
        assert 0.0 <= r["hit_rate"] <= 1.0
        assert r["p50_uncached"] <= r["p90_uncached"] <= r["p99_uncached"]
        assert r["req_per_s"] > 0 and r["pool_tokens"] == 6000
        assert r["hit_tokens"] + r["uncached_tokens"] == r["prompt_tokens"]
    assert sum(r["evicted_tokens"] for r in rows) > 0, "the small pool must force evictions"
    best = max(r["hit_rate"] for r in rows)
    rec = data["recommendation"]
    winner = next(r for r in rows if r["label"] == rec["policy"])
    assert best - winner["hit_rate"] <= 0.005 + 1e-12
    assert f"{100 * winner['hit_rate']:.1f}%" in rec["reason"]
    assert data["wall_s"] > 0


def test_tlru_config_is_derived_from_the_workload_and_said() -> None:
    r = run(*SMALL, "--policy", "tlru")
    assert r.exit_code == 0, r.output
    expected = derive_tlru(get_workload("chat", convs=30).stats())
    assert "derives it from chat" in r.stderr
    assert f"next_prompt_estimate = {expected.config['next_prompt_estimate']}" in r.stderr
    assert f"threshold={expected.config['threshold']}" in r.stdout and "(derived)" in r.stdout
    data = simulate_json(*SMALL, "--policy", "tlru")
    (row,) = data["results"]
    assert row["config_source"] == "workload-suggested"
    assert row["policy_config"] == expected.config
    assert data["tlru_derived"]["chat"]["config"] == expected.config


def test_table_for_people() -> None:
    r = run(*SMALL, "--policy", "lru", "--policy", "slru")
    assert r.exit_code == 0, r.output
    for col in ("hit rate", "p50 uncached", "p99 uncached", "evicted tokens", "req/s"):
        assert col in r.stdout
    assert re.search(r"Recommendation: run (lru|slru): .*\d+\.\d%", r.stdout)
    assert "wall time" in r.stderr


def test_per_policy_configs_by_position_and_by_name() -> None:
    data = simulate_json(*SMALL, "-p", "slru", "-c", '{"protected_threshold": 4}', "-p", "slru",
                    "-p", "tlru", "-c", 'tlru={"threshold": 640, "next_prompt_estimate": 100}')
    labels = [r["label"] for r in data["results"]]
    assert labels == ["slru[protected_threshold=4]", "slru", "tlru"]
    assert data["results"][0]["policy_config"] == {"protected_threshold": 4}
    assert data["results"][2]["config_source"] == "given"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["-p", "slru", "-c", '{"protected_treshold": 3}'], 1, "did you mean"),
        (["-p", "slru", "-c", "{bad json"], 1, "malformed JSON"),
        (["-p", "slru", "-c", '{"protected_threshold": "2"}'], 1, "must be an integer"),
        (["-p", "fifo"], 1, "hidden"),
        (["-p", "nope"], 1, "unknown policy 'nope'"),
        (["-c", '{"protected_threshold": 3}'], 2, "needs --policy"),
        (["-p", "lru", "-c", "slru={}"], 2, "not among the simulated policies"),
        (["--workload", "nope"], 1, "unknown workload 'nope'"),
        (["--param", "convz=3"], 1, "did you mean 'convs'"),
        (["--param", "convs=-3"], 1, "convs"),
        (["--plot", "out.txt"], 2, ".png"),
        (["--enable-metrics", "/no/such/dir/m.prom"], 2, "does not exist"),
        (["--trace", "x.jsonl", "--workload", "chat"], 2, "not both"),
    ],
)
def test_bad_input_exit_codes(args: list[str], code: int, needle: str) -> None:
    r = run("--param", "convs=3", *args) if "--param" not in args else run(*args)
    assert r.exit_code == code, r.output
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_extended_policy_runs_once_a_package_adds_it() -> None:
    from radix_evict import hookimpl

    class ExtendFifo:
        @hookimpl
        def radix_evict_extend_choices(self, extend: Any) -> None:
            extend("fifo")

    registry.add_plugin(ExtendFifo(), name="cli-sim-fifo")
    try:
        data = simulate_json(*SMALL, "-p", "fifo", "-p", "lru")
    finally:
        registry.remove_plugin("cli-sim-fifo")
    assert [r["label"] for r in data["results"]] == ["fifo", "lru"]


def test_plot_and_metrics_files(tmp_path: Path) -> None:
    png, prom = tmp_path / "sim.png", tmp_path / "sim.prom"
    data = simulate_json(*SMALL, "-p", "lru", "-p", "lfu", "--plot", str(png),
                    "--enable-metrics", str(prom))
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    for name, kind in [("radix_evict_cache_hit_rate", "gauge"),
                       ("radix_evict_prompt_tokens", "counter"),
                       ("radix_evict_cached_tokens", "counter"),
                       ("radix_evict_evicted_tokens", "counter"),
                       ("radix_evict_eviction_duration_seconds", "counter"),
                       ("radix_evict_requests", "counter"),
                       ("radix_evict_failed_admissions", "counter")]:
        assert families[name].type == kind and families[name].documentation, name
    samples = {(s.name, s.labels["policy"]): s.value
               for f in families.values() for s in f.samples}
    assert {p for _, p in samples} == {"lru", "lfu"}, "one sample per replay, by label"
    for row in data["results"]:
        p = row["label"]
        stats = row["stats"]
        assert samples[("radix_evict_cached_tokens_total", p)] == stats["hit_tokens"]
        assert samples[("radix_evict_evicted_tokens_total", p)] == row["evicted_tokens"]
        assert samples[("radix_evict_requests_total", p)] == row["requests"]
        assert samples[("radix_evict_cache_hit_rate", p)] == pytest.approx(stats["hit_rate"])
        assert samples[("radix_evict_eviction_duration_seconds_total", p)] == pytest.approx(
            stats["eviction_seconds"])


def test_metrics_of_a_matrix_carry_the_workload(tmp_path: Path) -> None:
    prom = tmp_path / "m.prom"
    simulate_json("--workload", "chat,agentic", "-P", "chat.convs=20", "-P", "agentic.sessions=10",
             "-p", "lru", "--pool-tokens", "6000", "--enable-metrics", str(prom))
    [fam] = [f for f in text_string_to_metric_families(prom.read_text())
             if f.name == "radix_evict_requests"]
    assert {(s.labels["policy"], s.labels["workload"]) for s in fam.samples} == {
        ("lru", "chat"), ("lru", "agentic")}


# ----------------------------------------------------------------------------- traces


def _trace(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_trace_replay_uses_the_4m_default_pool(tmp_path: Path) -> None:
    rows = [{"timestamp": 1000 * i, "input_length": 1500, "output_length": 20,
             "hash_ids": [0, 1, 100 + i]} for i in range(6)]
    trace = _trace(tmp_path / "t.jsonl", rows)
    data = simulate_json("--trace", str(trace), "--page-size", "512", "-p", "lru", "-p", "tlru")
    assert data["mode"] == "trace"
    assert all(r["pool_tokens"] == 4_000_000 // 512 * 512 for r in data["results"])
    lru = data["results"][0]
    assert lru["requests"] == 6
    # Requests 2..6 reuse the two shared 512-token blocks.
    assert lru["hit_tokens"] == 5 * 1024


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"timestamp": 1, "input_length": -5, "output_length": 1, "hash_ids": []}', ">= 0"),
        ('{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]}',
         "hash_ids has 2 blocks"),
        ('{"timestamp": 1, "input_length": 10}', "missing field"),
        # issue #36: an empty prompt is refused when the file is read, naming the field
        ('{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []}',
         "input_length must be >= 1, got 0"),
    ],
)
def test_bad_trace_line_names_file_and_line(tmp_path: Path, line: str, needle: str) -> None:
    good = json.dumps({"timestamp": 0, "input_length": 600, "output_length": 2,
                       "hash_ids": [0, 1]})
    trace = tmp_path / "bad.jsonl"
    trace.write_text(f"{good}\n{good}\n{line}\n")
    r = run("--trace", str(trace))
    assert r.exit_code == 1
    assert f"{trace}:3: " in r.stderr and needle in r.stderr
    assert "Traceback" not in r.stderr


def test_missing_trace_is_an_environment_error(tmp_path: Path) -> None:
    r = run("--trace", str(tmp_path / "nope.jsonl"))
    assert r.exit_code == 2 and "no such file" in r.stderr


# ----------------------------------------------------------------------------- matrix

MATRIX_PARAMS = ["--param", "convs=6", "--param", "requests=60", "--param", "hot_requests=60",
                 "--param", "agentic.sessions=3"]


def test_workload_all_matrix_with_winners_and_tiers(tmp_path: Path) -> None:
    png = tmp_path / "matrix.png"
    data = simulate_json("--workload", "all", *MATRIX_PARAMS, "--plot", str(png))
    assert data["mode"] == "matrix"
    names = [w["name"] for w in data["workloads"]]
    assert names == ["chat", "hot-set-with-scans", "popularity-shift", "priority-tiers",
                     "agentic"]
    assert len(data["results"]) == len(names) * len(PUBLIC)
    for w in names:
        cell = [r for r in data["results"] if r["workload"] == w]
        winner = data["winners"][w]
        best = max(r["hit_rate"] for r in cell)
        chosen = next(r for r in cell if r["label"] == winner)
        assert best - chosen["hit_rate"] <= 0.005 + 1e-12
        assert data["recommendations"][w]["policy"] == winner
    tiers = data["tier_hit_rates"]
    assert set(tiers) == set(PUBLIC)
    assert set(tiers["priority"]) == {"0", "1", "2"}
    by = {(r["workload"], r["label"]): r for r in data["results"]}
    assert by[("agentic", "lru")]["requests"] < 200  # the scoped param applied
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_matrix_table_for_people() -> None:
    r = run("--workload", "chat,priority-tiers", *MATRIX_PARAMS[:4], "-p", "lru",
            "-p", "priority")
    assert r.exit_code == 0, r.output
    assert "policy x workload" in r.stdout and "hit rate per priority tier" in r.stdout
    assert "chat: Recommendation: run" in r.stdout
    assert "priority-tiers: Recommendation: run" in r.stdout


def test_priority_tiers_alone_reports_tiers() -> None:
    r = run("--workload", "priority-tiers", "--param", "requests=60", "-p", "lru")
    assert r.exit_code == 0, r.output
    assert "priority 0" in r.stdout and "priority 2" in r.stdout


# ----------------------------------------------------------------------------- real KV


def test_model_tiny_reports_ttft_next_to_token_figures() -> None:
    data = simulate_json("--model", "tiny", "--param", "convs=2", "--param", "max_turns=2",
                    "-p", "lru", "--device", "cpu")
    assert data["mode"] == "engine" and data["device"] == "cpu"
    labels = [r["label"] for r in data["rows"]]
    assert labels == ["lru", "no-cache"]
    lru, base = data["rows"]
    for row in (lru, base):
        assert 0 < row["ttft_ms_p50"] <= row["ttft_ms_p90"] <= row["ttft_ms_p99"]
        assert row["p50_uncached"] <= row["p99_uncached"]
    assert base["hit_rate"] == 0.0 and base["cached_tokens"] == 0
    assert lru["prompt_tokens"] == base["prompt_tokens"]
    assert data["recommendation"]["policy"] == "lru"


def test_model_rejects_unknown_models_and_the_matrix(tmp_path: Path) -> None:
    assert run("--model", "huge").exit_code == 2
    r = run("--model", "tiny", "--workload", "all")
    assert r.exit_code == 2 and "one workload or one trace" in r.stderr


# ----------------------------------------------------------------------------- recommendation


@dataclass
class Row:
    label: str
    hit_rate: float
    p99_uncached: float
    evicted_tokens: int = 1

    @property
    def policy(self) -> str:
        return self.label


def test_recommend_clear_winner_with_numbers() -> None:
    rec = recommend([Row("lru", 0.60, 900), Row("slru", 0.70, 1000), Row("lfu", 0.65, 800)])
    assert rec.policy == "slru" and not rec.tie_break
    assert "70.0%" in rec.reason and "65.0%" in rec.reason and "lfu" in rec.reason
    assert "lru, SGLang's default, gets 60.0%" in rec.reason


def test_recommend_near_tie_goes_to_a_clearly_lower_p99() -> None:
    rec = recommend([Row("lru", 0.714, 3905), Row("tlru", 0.710, 3565)])
    assert rec.policy == "tlru" and rec.tie_break
    assert "3,565 vs 3,905" in rec.reason and "SGLang's default" in rec.reason
    # A tail only 1% lower is noise: the higher hit rate stays.
    rec = recommend([Row("lru", 0.714, 3905), Row("tlru", 0.710, 3865)])
    assert rec.policy == "lru" and not rec.tie_break
    # Outside the tie band the hit rate decides, whatever the tail.
    assert recommend([Row("lru", 0.72, 3905), Row("tlru", 0.71, 100)]).policy == "lru"


def test_recommend_says_plainly_when_lru_wins() -> None:
    rec = recommend([Row("lru", 0.8, 100), Row("lfu", 0.6, 90)])
    assert rec.policy == "lru" and "keep it" in rec.reason


def test_recommend_all_tied_says_the_pool_never_filled() -> None:
    rec = recommend([Row("lru", 0.5, 10, 0), Row("lfu", 0.5, 10, 0)])
    assert rec.policy == "lru" and "nothing was evicted" in rec.reason


def test_recommend_names_lru_as_the_default_when_it_is_runner_up() -> None:
    rec = recommend([Row("lru", 0.60, 900), Row("priority", 0.70, 800)])
    assert rec.policy == "priority"
    assert "for lru (SGLang's default), +10.0 points" in rec.reason


@pytest.mark.parametrize("model", [[], ["--model", "tiny"]])
def test_a_replay_that_served_nothing_is_not_recommended(model: list[str]) -> None:
    r = run_cli("simulate", "-p", "lru", "-p", "lfu", *model, "-P", "convs=3",
                "--pool-tokens", "1", "--json")
    assert r.exit_code == 1, r.output
    assert "requests found no room even after eviction" in r.stderr
    assert "no policy to recommend" in r.stderr and "Recommendation" not in r.stdout
    assert json.loads(r.stdout)["status"] == "error"


def test_the_matrix_recommends_the_core_s_winners_without_choosing_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from radix_evict.sim import recommend

    def again(*_: object) -> None:
        raise AssertionError("the CLI chose a winner the core had chosen")

    monkeypatch.setattr(recommend, "choose_winner", again)
    r = run_cli("simulate", "-w", "chat,agentic", "-P", "chat.convs=8", "-P", "sessions=4",
                "-p", "lru", "-p", "lfu", "--json", "--jobs", "1")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["winners"] == {w: rec["policy"] for w, rec in data["recommendations"].items()}


def test_token_sizes_take_the_sweeps_suffixes() -> None:
    """--pool-tokens and --host-tokens read sizes as sweep's lists do: 4K is 4000, 8Ki 8192."""
    small = ("--param", "convs=2", "-p", "lru")
    suffixed = simulate_json(*small, "--pool-tokens", "4K", "--host-tokens", "8Ki")
    spelled = simulate_json(*small, "--pool-tokens", "4000", "--host-tokens", "8192")
    assert suffixed["pool_tokens"] == 4000 and suffixed["host_tier"]["tokens"] == 8192

    keys = ("pool_tokens", "hit_tokens", "hit_rate", "p99_uncached", "evicted_tokens",
            "host_hit_tokens")
    figures = [{k: data["results"][0][k] for k in keys} for data in (suffixed, spelled)]
    assert figures[0] == figures[1] and figures[0]["hit_tokens"] > 0
