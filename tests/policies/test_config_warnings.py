"""A policy says which valid configs defeat it (``PolicyConfig.config_warnings``); lint asks it.

The lint engine names no policy: slru's "threshold 0 is plain LRU" lives on
slru's config model, and a third-party policy's own warnings reach
``radix-evict lint`` the same way.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli
from pydantic import Field

from radix_evict import (
    ConfigWarning,
    EvictionPolicy,
    PolicyConfig,
    PolicySpec,
    hookimpl,
    registry,
)

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")
ROOT = Path(__file__).resolve().parents[2]


class WindowConfig(PolicyConfig):
    window: int = Field(default=8, ge=0, description="how far back it looks (0: not at all)")

    def config_warnings(self) -> list[ConfigWarning]:
        if self.window == 0:
            return [ConfigWarning(("window",), "window_zero", "window 0 looks at nothing",
                                  hint="a window >= 1")]
        if self.window == 13:
            raise RuntimeError("unlucky")
        return []


class WindowPolicy(EvictionPolicy[WindowConfig]):
    name = "windowed"

    def score(self, node: Any) -> float:
        return float(node.last_access_time)


class _Plugin:
    @hookimpl
    def radix_evict_register_policies(self, register: Any) -> None:
        register(PolicySpec(name="windowed", policy=WindowPolicy, summary="windowed lru"))

    @hookimpl
    def radix_evict_extend_choices(self, extend: Any) -> None:
        extend("windowed")


@pytest.fixture
def windowed() -> Iterator[None]:
    registry.add_plugin(_Plugin(), name="test-config-warnings")
    yield
    registry.remove_plugin("test-config-warnings")


def test_slru_says_a_threshold_of_zero_is_plain_lru() -> None:
    (w,) = registry.config_warnings("slru", {"protected_threshold": 0})
    assert w.loc == ("protected_threshold",) and w.type == "plain_lru"
    assert "plain LRU" in w.msg and w.hint
    assert registry.config_warnings("slru", {"protected_threshold": 3}) == []
    assert registry.config_warnings("slru", None) == []


def test_an_invalid_config_has_no_warnings_validate_reports_it() -> None:
    assert registry.config_warnings("slru", {"protected_threshold": -1}) == []
    assert registry.validate("slru", {"protected_threshold": -1})


def test_the_default_finds_nothing() -> None:
    for name in registry.choices(extended=True):
        assert registry.config_warnings(name) == [], name


def test_a_raising_method_is_one_warning_naming_the_policy(windowed: None) -> None:
    (w,) = registry.config_warnings("windowed", {"window": 13})
    assert w.type == "config_warnings_failed"
    assert "windowed" in w.msg and "RuntimeError: unlucky" in w.msg


def test_lint_reports_a_third_party_policys_own_warning(
    windowed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_PLUGINS", "")  # radix-evict's SGLang plugin loads
    path = tmp_path / "launch.sh"
    path.write_text("python -m sglang.launch_server --radix-eviction-policy windowed "
                    "--radix-eviction-policy-config '{\"window\": 0}'\n")
    r = run_cli("lint", str(path), "--json")
    data = json.loads(r.stdout)
    found = [p for p in data["warnings"] if p["type"] == "window_zero"]
    assert found, data
    assert found[0]["column"] == path.read_text().index("0}") + 1


def test_the_lint_engine_names_no_policy() -> None:
    """No string in core/lint is a built-in policy's name: what a policy's config means is
    the policy's to say."""
    names = {"lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"}
    found = []
    for path in sorted((ROOT / "core" / "lint").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not found, found
