"""``simulate --help`` (issue #37): options in named panels, every default as typer's
``[default: ...]``, and the --policy help naming the registry's hidden policies."""

from __future__ import annotations

import re

import pytest
from helpers.rigs import run_cli

from radix_evict import registry

PANELS = ("Workload", "Cache", "Policies", "Timing (--timing)", "Host tier", "Output",
          "Model/engine (--model)")


@pytest.fixture
def help_text(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "300")
    r = run_cli("simulate", "--help")
    assert r.exit_code == 0, r.output
    return re.sub(r"\s+", " ", r.stdout)


def test_options_sit_in_named_panels(help_text: str) -> None:
    for panel in PANELS:
        assert f"╭─ {panel} ─" in help_text, panel


def test_defaults_are_shown_one_way(help_text: str) -> None:
    assert "(default" not in help_text.lower().replace("[default", "")
    assert "Default:" not in help_text
    for shown in ("[default: (chat)]", "[default: 1]", "[default: (8192)]",
                  "[default: (write_through)]", "[default: (the workload's)]"):
        assert shown in help_text


def test_policy_help_names_the_hidden_policies_from_the_registry(help_text: str) -> None:
    offered = registry.choices()
    hidden = [n for n in registry.choices(extended=True) if n not in offered]
    expect = ", ".join(hidden) or "none"
    assert f"Registered but hidden (not offered here): {expect}." in help_text
