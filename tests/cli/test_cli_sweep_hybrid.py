"""CLI: ``sweep --model-arch`` (issue #39): hybrid models as an axis, with ``--kv-memory`` and the
split ratios; rows carry the architecture, the split and both hit rates; errors name the
option."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

SMALL = ["-p", "lfu", "-P", "chat.convs=12", "--page-size", "16", "--no-progress"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def run(*args: str) -> Any:
    return run_cli("sweep", *args)


def test_model_arch_is_an_axis_and_its_rows_carry_the_split(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    args = ["--model-arch", "gpt-oss-120b", "--kv-memory", "2GiB",
            "--swa-full-tokens-ratio", "0.25,0.8", "--out", str(out)]
    r = run(*SMALL, *args)
    assert r.exit_code == 0, r.output
    assert "x 2 model splits" in r.stderr
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [row["swa_full_tokens_ratio"] for row in rows] == ["0.25", "0.8"]
    assert all(row["model_arch"] == "gpt-oss-120b" and float(row["full_hit_rate"])
               >= float(row["hit_rate"]) for row in rows)
    again = run(*SMALL, *args)
    assert again.exit_code == 0 and "0 cells" in again.stderr + again.stdout


@pytest.mark.parametrize(("args", "match"), [
    (["--model-arch", "no-such-model"], "model_arch no-such-model"),
    (["--kv-memory", "40GiB"], "kv_memory: hybrid-model options"),
])
def test_bad_hybrid_options_are_usage_errors(args: list[str], match: str) -> None:
    r = run(*SMALL, *args, "--dry-run")
    assert r.exit_code == 2, r.output
    assert match in r.stderr
