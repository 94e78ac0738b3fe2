"""CLI: ``sweep --admission`` (issue #40): an axis of host-tier admission policies, its rows
carrying the policy, its refused backups and PCIe bytes; errors name the option."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

SMALL = ["-p", "lru", "-P", "chat.convs=12", "--pool-tokens", "8000", "--no-progress"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def test_admission_is_an_axis_and_its_rows_carry_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    r = run(*SMALL, "--host-tokens", "8K", "--admission", "selective,tinylfu", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "x 2 admission policies" in r.stderr
    assert "admission selective" in r.stdout and "admission tinylfu" in r.stdout
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [row["admission"] for row in rows] == ["selective", "tinylfu"]
    assert all(int(row["pcie_bytes"]) > 0 and row["admission_rejected_tokens"] for row in rows)
    again = run(*SMALL, "--host-tokens", "8K", "--admission", "tinylfu", "--out", str(out))
    assert again.exit_code == 0 and "0 cells" in again.stderr + again.stdout


@pytest.mark.parametrize(("args", "match"), [
    (["--host-tokens", "8K", "--admission", "lfu"], "admission 'lfu': use selective, tinylfu"),
    (["--admission", "selective"], "admission: host-tier options"),
])
def test_bad_admission_is_a_usage_error(args: list[str], match: str) -> None:
    r = run(*SMALL, *args, "--dry-run")
    assert r.exit_code == 2, r.output
    assert match in r.stderr
