"""``sweep --help`` and ``sglang check --help`` (issue #37): options in named panels, every
default as typer's ``[default: ...]``; and the options reach the command as one dataclass."""

from __future__ import annotations

import dataclasses
import re

import pytest
from helpers.rigs import run_cli

from radix_evict.cli.cmd_sglang import PANELS as SGLANG_PANELS
from radix_evict.cli.cmd_sglang import SglangCheckOptions
from radix_evict.cli.sweep_options import PANELS, SweepOptions


def _help(monkeypatch: pytest.MonkeyPatch, *command: str) -> str:
    monkeypatch.setenv("COLUMNS", "300")
    r = run_cli(*command, "--help")
    assert r.exit_code == 0, r.output
    return re.sub(r"\s+", " ", r.stdout)


def test_sweep_options_sit_in_named_panels(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(monkeypatch, "sweep")
    for panel in PANELS:
        assert f"╭─ {panel} ─" in text, panel
    # the panels cover every field, each once, in the dataclass's order
    names = [n for fields in PANELS.values() for n in fields]
    assert names == [f.name for f in dataclasses.fields(SweepOptions)]


def test_sweep_defaults_are_shown_one_way(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(monkeypatch, "sweep")
    assert "(default" not in text.lower().replace("[default", "")
    assert "Default:" not in text
    for shown in ("[default: (chat, unless --trace is given)]", "[default: (1)]",
                  "[default: (hit-rate)]", "[default: (8192)]", "[default: (write_through)]",
                  "[default: (every usable core)]", "[default: 10000]"):
        assert shown in text, shown
    assert "Needs radix-evict[ray]." in text  # not eaten as markup


def test_sglang_check_options_sit_in_named_panels(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _help(monkeypatch, "sglang", "check")
    for panel in SGLANG_PANELS:
        assert f"╭─ {panel} ─" in text, panel
    assert [n for fields in SGLANG_PANELS.values() for n in fields] == [
        f.name for f in dataclasses.fields(SglangCheckOptions)]
