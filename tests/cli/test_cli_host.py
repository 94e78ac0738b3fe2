"""CLI: ``simulate`` with a host tier (options, errors that name the option, JSON keys, tables)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.rigs import run_cli, simulate_json

SMALL = ["--param", "convs=30", "--pool-tokens", "6000", "--no-progress"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")



def test_json_has_api_md_keys_per_result_and_the_tier_at_top_level() -> None:
    data = simulate_json(*SMALL, "--hicache-ratio", "2", "--write-policy", "write_back",
                    "-p", "lru", "-p", "lfu")
    assert data["host_tier"]["write_policy"] == "write_back"
    assert data["host_tier"]["hicache_ratio"] == 2.0
    for r in data["results"]:
        assert r["host_tokens"] == 12_001  # SGLang's sizing: floor(6,000 x 2) + a page
        total = r["device_hit_rate"] + r["host_hit_rate"] + r["miss_rate"]
        assert total == pytest.approx(1.0)
        assert r["device_hit_rate"] + r["host_hit_rate"] == pytest.approx(r["hit_rate"])
        for key in ("written_tokens", "loaded_tokens", "host_evicted_tokens"):
            assert r[key] >= 0
        assert r["host_policy"] == r["policy"]  # by default the device policy ranks host leaves


def test_without_a_host_tier_the_json_has_no_host_keys() -> None:
    data = simulate_json(*SMALL, "-p", "lru")
    assert "host_tier" not in data
    assert "device_hit_rate" not in data["results"][0]


def test_host_tokens_zero_is_the_one_tier_replay() -> None:
    one = simulate_json(*SMALL, "-p", "lru")["results"][0]
    zero = simulate_json(*SMALL, "-p", "lru", "--host-tokens", "0")["results"][0]
    assert zero["hit_rate"] == one["hit_rate"]
    assert zero["evicted_tokens"] == one["evicted_tokens"]
    assert "device_hit_rate" not in zero


def test_the_table_splits_hits_and_shows_the_bound_with_oracle() -> None:
    r = run_cli("simulate", *SMALL, "-p", "lru", "--host-tokens", "6000", "--oracle",
                "--host-policy", "lfu")
    assert r.exit_code == 0, r.output
    assert "device and host tiers" in r.stdout
    assert "host hit" in r.stdout and "oracle + ceiling" in r.stdout
    assert "lfu" in r.stdout


def test_the_host_reference_row_is_not_called_a_bound_where_it_is_beaten() -> None:
    # Issue #36: lfu's device hit 19.1% over the one-tier oracle's 18.4%.
    r = run_cli("simulate", "--oracle", "--param", "convs=40", "--pool-tokens", "6000",
                "-p", "lfu", "--host-tokens", "6000", "--no-progress")
    assert r.exit_code == 0, r.output
    rows = [line.split("│")[1].strip() for line in r.stdout.splitlines() if "│" in line]
    assert "bound" not in rows and "oracle + ceiling" in rows
    text = " ".join(r.stdout.split())
    assert "a reference, not a bound" in text and "lfu serves more from the device here" in text
    assert "no host size or policy pair does better" not in text


@pytest.mark.parametrize(("args", "needle"), [
    (["--host-tokens", "100", "--hicache-ratio", "2"], "--host-tokens or --hicache-ratio"),
    (["--write-policy", "write_back"], "add --host-tokens N or --hicache-ratio R"),
    (["--host-tokens", "100", "--write-policy", "write_trough"], "--write-policy 'write_trough'"),
    (["--host-tokens", "100", "--write-policy", "write_back", "--write-threshold", "2"],
     "--write-threshold is for write_through"),
    (["--host-tokens", "100", "--host-config", "{}"], "--host-config goes with --host-policy"),
    (["--host-tokens", "100", "--host-policy", "lfru"], "'lfru'"),
    (["--host-tokens", "100", "--host-policy", "mru"], "hidden"),
    (["--host-tokens", "100", "--host-policy", "slru", "--host-config",
      '{"protected_treshold": 2}'], "protected_treshold"),
    (["--hicache-ratio", "0"], "--hicache-ratio must be above 0"),
    (["--host-tokens", "100", "--model", "tiny"], "the host tier is for token and timed"),
])
def test_bad_options_name_the_option(args: list[str], needle: str) -> None:
    r = run_cli("simulate", *SMALL, *args)
    # exit 1 for an invalid policy or config (as --policy/--config), 2 for misused options
    assert r.exit_code == (1 if "host-policy" in " ".join(args) else 2), r.output
    assert needle in r.output


@pytest.mark.parametrize(("args", "needle"), [
    (["--hicache-ratio", "inf"], "--hicache-ratio must be above 0 and finite, got inf"),
    (["--hicache-ratio", "nan"], "--hicache-ratio must be above 0 and finite, got nan"),
    (["--hicache-ratio", "1e308"], "--hicache-ratio 1e+308: a host tier of 1e+308 x the "
                                   "6,000-token pool needs over 1e15 GiB (27 bytes a token)"),
    (["--hicache-ratio", "1e15"], "--hicache-ratio 1e+15: a host tier of 1e+15 x the "
                                  "6,000-token pool needs about"),
    (["--host-tokens", "2000000000"], "--host-tokens 2,000,000,000: a host tier that size needs "
                                      "about 50.3 GiB (27 bytes a token), more than this "
                                      "machine's 16.0 GiB"),
])
def test_a_host_tier_too_large_for_memory_is_refused_up_front(
        monkeypatch: pytest.MonkeyPatch, args: list[str], needle: str) -> None:
    monkeypatch.setattr("radix_evict.sim.preflight.physical_memory", lambda: 16 * 2**30)
    r = run_cli("simulate", *SMALL, "-p", "lru", *args)
    assert r.exit_code == 2, r.output
    assert needle in " ".join(r.output.split()), r.output
    assert "internal error" not in r.output


def test_a_ratio_is_checked_against_each_default_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("radix_evict.sim.preflight.physical_memory", lambda: 16 * 2**30)
    r = run_cli("simulate", "--param", "convs=30", "-p", "lru", "--hicache-ratio", "1e12")
    assert r.exit_code == 2 and "a host tier of 1e+12 x the" in r.output, r.output


def test_the_ratio_help_says_above_0() -> None:
    import click
    import typer

    from radix_evict.cli import app

    command = typer.main.get_command(app).commands["simulate"]  # type: ignore[attr-defined]
    ratio = next(p for p in command.params if p.name == "hicache_ratio")
    record = ratio.get_help_record(click.Context(command))
    assert record is not None
    assert "(a number above 0)" in record[1]
    assert "x>=0" not in record[1]  # click's range text: 0 is refused


def test_timed_with_a_host_tier_reports_copy_wait() -> None:
    data = simulate_json(*SMALL, "--timing", "--hicache-ratio", "1", "--write-policy", "write_back",
                    "-p", "lru")
    r = data["results"][0]
    assert r["copy_wait_s"] >= 0 and r["ttft_ms"]["p99"] > 0


def test_timed_with_a_cost_model_without_transfer_is_refused(tmp_path: Any) -> None:
    model = tmp_path / "m.toml"
    model.write_text("[prefill]\nbase_ms = 1\nper_token_ms = 0.01\n"
                     "[decode]\nbase_ms = 1\nper_request_ms = 0.01\n")
    r = run_cli("simulate", *SMALL, "--timing", "--cost-model", str(model), "--host-tokens",
                "6000")
    assert r.exit_code == 1
    assert "no [transfer] table" in r.output
