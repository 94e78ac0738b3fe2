"""Lint opens no file a linted config names (a learned policy's ``weights``) unless asked to.

The path belongs to the machine the launch is for; here it may be ``/dev/zero`` or a FIFO,
which a plain read would follow until the OOM killer, or block on forever. Every call runs
under :func:`~radix_evict.testing.call_bounded`, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import Result
from helpers.rigs import run_cli

from radix_evict.lint import lint_text
from radix_evict.testing import call_bounded

pytest.importorskip("radix_evict_learned")


def sglang_script(weights: str) -> str:
    return ("python -m sglang.launch_server --model-path m --radix-eviction-policy learned "
            f"--radix-eviction-policy-config '{json.dumps({'weights': weights})}'\n")


def vllm_script(weights: str) -> str:
    config = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
              "kv_connector_extra_config": {
                  "cpu_bytes_to_use": 2**30, "eviction_policy": "radix_evict_learned",
                  "cache_policy_module_path": "radix_evict.vllm",
                  "radix_eviction_config": {"weights": weights}}}
    return f"vllm serve m --kv-transfer-config '{json.dumps(config)}'\n"


def never_ending(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(tmp_path / "w.json")
        return str(tmp_path / "w.json")
    return "/dev/zero"


def lint(*args: str) -> Result:
    return call_bounded(lambda: run_cli("lint", *args), seconds=30)


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("script", [sglang_script, vllm_script])
def test_lint_does_not_open_a_weights_path(tmp_path: Path, kind: str, script: object) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(script(never_ending(tmp_path, kind)))  # type: ignore[operator]
    r = lint(str(path))
    assert r.exit_code == 0, r.output
    assert "weights" not in r.output


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_lint_open_files_checks_the_weights_within_bounds(tmp_path: Path, kind: str) -> None:
    weights = never_ending(tmp_path, kind)
    sglang, vllm = tmp_path / "serve.sh", tmp_path / "vserve.sh"
    sglang.write_text(sglang_script(weights))
    vllm.write_text(vllm_script(weights))
    r = lint("--open-files", str(sglang), str(vllm))
    assert r.exit_code == 1, r.output
    refused = f"{weights}: cannot read the weights file (not a regular file"
    assert r.output.count(refused) == 2, r.output


def test_the_library_takes_the_same_switch(tmp_path: Path) -> None:
    text = sglang_script("/dev/zero")
    assert call_bounded(lambda: lint_text(text, "serve.sh")).outcome == "ok"
    opened = call_bounded(lambda: lint_text(text, "serve.sh", open_files=True))
    assert opened.outcome == "invalid"
    assert [p.type for p in opened.problems if p.severity == "error"] == ["value_error"]
    missing = call_bounded(lambda: lint_text(sglang_script(str(tmp_path / "no.json")),
                                             "serve.sh", open_files=True))
    assert "cannot read the weights file" in str([p.msg for p in missing.problems])
