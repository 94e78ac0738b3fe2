"""CLI: ``sweep`` with a host tier (HiCache): its axes, errors as simulate's naming the option,
one-tier keys unchanged, host columns in the rows, the tables and the plot over host size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli
from helpers.sweeps import write_cost_model

from radix_evict.sim.sweep.schema import HOST_ROW_FIELDS, TIMED_HOST_ROW_FIELDS

SMALL = ["-P", "chat.convs=12", "--pool-tokens", "8000", "--no-progress"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def test_a_host_sweep_shows_the_tiers_and_plots_hit_rate_over_host_size(tmp_path: Path) -> None:
    out, plot = tmp_path / "rows.csv", tmp_path / "host.png"
    args = ["-p", "lru,lfu", *SMALL, "--write-policy", "write_through,write_back", "--oracle",
            "--out", str(out)]
    r = run(*args, "--host-tokens", "0,8K", "--plot", str(plot))
    assert r.exit_code == 0, r.output
    assert ("2 policy configs x 1 pool size x 1 workload x 1 seed x 2 host sizes x 2 write "
            "policies + 2 reference cells (oracle, ceiling) = 8 cells") in r.stderr
    assert "note: --host-tokens 0 is no host tier" in r.stderr
    assert "device hit" in r.stdout and "host hit" in r.stdout
    assert "host 8,000 tokens, write_back" in r.stdout  # the best table's host column
    assert "hit rate by host tier size" in r.stdout
    assert plot.read_bytes().startswith(PNG_MAGIC)
    assert out.read_text().splitlines()[0] == ",".join(HOST_ROW_FIELDS)
    # one more host size: the rows of the first run are kept
    again = run(*args, "--host-tokens", "0,8K,16K", "--json")
    assert again.exit_code == 0, again.output
    assert "8 already in" in again.stderr and "4 to run" in again.stderr
    data = json.loads(again.stdout)
    rows = data["rows"]
    assert (data["cells"], data["ran"], data["kept"]) == (12, 4, 8)
    tiered = [row for row in rows if row.get("write_policy")]
    assert {row["host_tokens"] for row in tiered} == {8_000, 16_000}
    assert all(row["device_hit_rate"] + row["host_hit_rate"] + row["miss_rate"]
               == pytest.approx(1.0) for row in tiered)
    curves = data["summary"]["host_curves"]
    assert {(c["policy"], c["host_line"]) for c in curves} == {
        (p, w) for p in ("lru", "lfu") for w in ("write_through", "write_back")}
    assert all(c["host_tokens"] == [0, 8_000, 16_000] for c in curves)


def test_host_tokens_zero_leaves_the_cells_and_their_keys_as_they_were() -> None:
    def cells(*args: str) -> list[str]:
        r = run("-p", "lru,lfu", *SMALL, "--dry-run", "--json", *args)
        assert r.exit_code == 0, r.output
        return [c["cell"] for c in json.loads(r.stdout)["cells"]]

    plain = cells()
    assert cells("--host-tokens", "0") == plain
    assert cells("--host-tokens", "0", "--write-policy", "write_back,write_through") == plain
    assert cells("--host-tokens", "0,8K")[:2] == plain
    assert all('"host":' in key for key in cells("--host-tokens", "0,8K")[2:])


def test_a_timed_host_sweep_shows_ttft_over_host_size(tmp_path: Path) -> None:
    out, plot = tmp_path / "rows.csv", tmp_path / "host.png"
    r = run("--timing", "-p", "lru", *SMALL, "--rate", "4", "--max-running", "16",
            "--host-tokens", "0,8K", "--write-policy", "write_back", "--out", str(out),
            "--plot", str(plot))
    assert r.exit_code == 0, r.output
    assert "hit rate / p99 TTFT ms by host tier size" in r.stdout
    assert out.read_text().splitlines()[0] == ",".join(TIMED_HOST_ROW_FIELDS)
    assert plot.read_bytes().startswith(PNG_MAGIC)


def test_a_grid_file_takes_the_host_keys_and_the_command_line_replaces_them(
        tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("policies: [lru]\nworkloads: [chat]\nparams: {chat.convs: 12}\n"
                    "pool_tokens: 8K\nhicache_ratio: [1, 2]\nwrite_policy: [write_back]\n"
                    "host_policy: [slru]\nhost_config: {slru: {protected_threshold: 3}}\n",
                    encoding="utf-8")
    r = run("--grid", str(grid), "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    hosts = [json.loads(c["cell"])["host"] for c in json.loads(r.stdout)["cells"]]
    assert [(h["ratio"], h["tokens"], h["policy"], h["config"]) for h in hosts] == [
        (1.0, None, "slru", {"protected_threshold": 3}),
        (2.0, None, "slru", {"protected_threshold": 3})]
    # --host-tokens replaces the file's ratios (one axis: the host size); NAME=JSON its config
    r = run("--grid", str(grid), "--dry-run", "--json", "--host-tokens", "4K",
            "--host-config", 'slru={"protected_threshold": 5}')
    assert r.exit_code == 0, r.output
    hosts = [json.loads(c["cell"])["host"] for c in json.loads(r.stdout)["cells"]]
    assert [(h["ratio"], h["tokens"], h["config"]) for h in hosts] == [
        (None, 4_000, {"protected_threshold": 5})]


@pytest.mark.parametrize("args", [
    ["--host-tokens", "100", "--hicache-ratio", "2"],
    ["--write-policy", "write_back"],
    ["--host-policy", "lfu"],
    ["--host-tokens", "100", "--write-policy", "write_trough"],
    ["--host-tokens", "100", "--write-policy", "write_back", "--write-threshold", "2"],
    ["--host-tokens", "100", "--host-config", "{}"],
    ["--host-tokens", "100", "--host-policy", "lfru"],
    ["--host-tokens", "100", "--host-policy", "mru"],
    ["--host-tokens", "100", "--host-policy", "slru", "--host-config",
     '{"protected_treshold": 2}'],
    ["--hicache-ratio", "0"],
    ["--host-tokens", "100", "--write-threshold", "0"],
])
def test_host_options_are_checked_as_simulate_checks_them(args: list[str]) -> None:
    """Each value goes through simulate's own checker: same message, same exit code."""
    swept = run("-p", "lru", *SMALL, "--dry-run", *args)
    simulated = run_cli("simulate", "-p", "lru", *SMALL, *args)
    assert swept.exit_code == simulated.exit_code != 0, swept.output
    assert swept.stderr.strip().splitlines()[-1] == simulated.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("args", [["--hicache-ratio", "2,1e308"], ["--host-tokens", "8K,2G"]])
def test_a_host_tier_too_large_for_memory_is_refused_as_simulate_refuses_it(
        monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.setattr("radix_evict.sim.preflight.physical_memory", lambda: 16 * 2**30)
    r = run("-p", "lru", *SMALL, "--dry-run", *args)
    assert r.exit_code == 2 and "a host tier" in r.stderr and "(27 bytes a token)" in r.stderr, \
        r.output


def test_a_list_value_is_checked_too_and_a_timed_host_tier_needs_a_transfer_table(
        tmp_path: Path) -> None:
    # the second value of each axis goes through simulate's checker too
    for args, needle in ((["--host-tokens", "8K", "--write-policy", "write_back,write_trough"],
                          "--write-policy 'write_trough'"),
                         (["--host-tokens", "8K", "--host-policy", "lfu,lfru"], "'lfru'"),
                         (["--hicache-ratio", "2,-1"], "--hicache-ratio must be above 0")):
        r = run("-p", "lru", *SMALL, "--dry-run", *args)
        assert r.exit_code != 0 and needle in r.stderr, r.output
    model = str(write_cost_model(tmp_path / "gpu.toml"))  # no [transfer] table
    host = ["--timing", "--cost-model", model, "--host-tokens", "8000"]
    swept = run("-p", "lru", *SMALL, "--dry-run", *host)
    simulated = run_cli("simulate", "-p", "lru", *SMALL, *host)
    assert swept.exit_code == simulated.exit_code == 1, swept.output
    assert "no [transfer] table" in swept.stderr
    assert swept.stderr.strip().splitlines()[-1] == simulated.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("args", "match"), [
    (["--host-tokens", "1M,lots"], "--host-tokens: 'lots' is not a whole number"),
    (["--hicache-ratio", "2,big"], "--hicache-ratio: expected numbers, got 'big'"),
    (["--host-tokens", "1M", "--host-policy", "lru,lfu", "--host-config", "{}"],
     "a plain --host-config goes with one --host-policy"),
    (["--host-tokens", "1M", "--host-config", "slru={}"],
     "--host-config for slru, which is not among the host policies (device); add "
     "--host-policy slru"),
    (["--host-tokens", "1M", "--host-policy", "lfu", "--host-config", "lfu={}",
      "--host-config", "lfu={}"], "--host-config lfu=... given twice"),
])
def test_bad_host_axes_are_usage_errors_naming_the_option(args: list[str], match: str) -> None:
    r = run("-p", "lru", *SMALL, "--dry-run", *args)
    assert r.exit_code == 2, r.output
    assert match in r.stderr


def test_a_grid_files_bad_host_value_names_the_option(tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text("host_tokens: [8K]\nwrite_threshold: 0\n", encoding="utf-8")
    r = run("-p", "lru", *SMALL, "--dry-run", "--grid", str(grid))
    assert r.exit_code == 2, r.output
    assert "--write-threshold must be >= 1, got 0" in r.stderr
