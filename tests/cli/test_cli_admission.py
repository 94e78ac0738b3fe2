"""CLI: ``simulate --admission`` (host-tier admission) and the PCIe figures per policy."""

from __future__ import annotations

import pytest
from helpers.rigs import run_cli, simulate_json

from radix_evict.sim.timed.cost import DEFAULT_COST_MODEL, load_cost_model

SMALL = ["--param", "convs=30", "--pool-tokens", "6000", "--no-progress", "-p", "lru",
         "--hicache-ratio", "2"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def test_every_host_result_reports_admission_and_pcie_bytes() -> None:
    kv = load_cost_model(DEFAULT_COST_MODEL).transfer
    assert kv is not None
    data = simulate_json(*SMALL)
    assert data["host_tier"]["admission"] is None
    r = data["results"][0]
    assert r["admission"] == "none" and r["admission_rejected_tokens"] == 0
    assert r["pcie_tokens"] == r["written_tokens"] + r["loaded_tokens"] > 0
    assert r["pcie_bytes"] == r["pcie_tokens"] * kv.kv_bytes_per_token
    assert r["pcie_cost_model"] == DEFAULT_COST_MODEL


@pytest.mark.parametrize("admission", ["selective", "tinylfu"])
def test_an_admission_policy_writes_less_and_says_so(admission: str) -> None:
    every = simulate_json(*SMALL)["results"][0]
    data = simulate_json(*SMALL, "--admission", admission)
    assert data["host_tier"]["admission"] == admission
    r = data["results"][0]
    assert r["admission"] == admission
    assert r["admission_rejected_tokens"] > 0
    assert r["written_tokens"] < every["written_tokens"]


def test_the_host_table_has_the_admission_and_pcie_columns() -> None:
    r = run_cli("simulate", *SMALL, "--admission", "tinylfu")
    assert r.exit_code == 0, r.output
    assert "admission" in r.stdout and "PCIe GB" in r.stdout and "tinylfu" in r.stdout


def test_a_bad_admission_is_a_usage_error_naming_it() -> None:
    r = run_cli("simulate", *SMALL, "--admission", "tinylfx")
    assert r.exit_code == 2
    assert "--admission 'tinylfx'" in r.output and "tinylfu" in r.output


def test_admission_needs_a_host_tier() -> None:
    r = run_cli("simulate", "--no-progress", "--admission", "tinylfu")
    assert r.exit_code == 2
    assert "--admission" in r.output and "--host-tokens" in r.output
