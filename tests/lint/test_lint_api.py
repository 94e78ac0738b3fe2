"""``radix_evict.lint`` as a library: its public API, outcomes, and what it may import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.rigs import run_cli

import radix_evict.lint as lint
from radix_evict.lint import lint_paths, lint_text
from radix_evict.sglang import native

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

BAD = "python -m sglang.launch_server --radix-eviction-policy lfuu\n"


def test_public_names() -> None:
    assert {"lint_paths", "lint_text", "LintReport", "LintProblem"} <= set(lint.__all__)
    assert all(hasattr(lint, n) for n in lint.__all__)


def test_lint_text_gives_what_lint_paths_gives(tmp_path: Path) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(BAD)
    from_disk = lint_paths([path])
    in_hand = lint_text(BAD, str(path))
    assert from_disk.to_dict() == in_hand.to_dict()
    assert in_hand.outcome == lint.INVALID and not in_hand.ok


def test_kind_overrides_the_name() -> None:
    assert lint_text(BAD, "notes.txt").outcome == lint.INVALID  # read as YAML: a string holds it
    report = lint_text('{"radix-eviction-policy": "lfuu"}', "x", kind="json")
    assert [p.type for p in report.problems] == ["unknown_policy"]
    with pytest.raises(ValueError, match="kind must be one of yaml, json, toml, shell, dockerfile"):
        lint_text(BAD, "x", kind="ini")


@pytest.mark.parametrize(("text", "outcome", "code"), [
    ("sglang serve m --radix-eviction-policy lru\n", "ok", 0),
    (BAD, "invalid", 1),
])
def test_outcomes_are_the_clis_exit_codes(tmp_path: Path, text: str, outcome: str,
                                          code: int) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(text)
    assert lint_paths([path]).outcome == outcome
    assert run_cli("lint", str(path)).exit_code == code
    missing = tmp_path / "missing.yaml"
    assert lint_paths([missing]).outcome == lint.UNCHECKED
    assert run_cli("lint", str(missing)).exit_code == 2


def test_the_engine_imports_nothing_of_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "serve.sh"
    path.write_text(BAD)
    code = ("import sys; from radix_evict.lint import lint_paths, formats; "
            f"r = lint_paths([{str(path)!r}]); formats.sarif(r, '0'); "
            "bad = [m for m in sys.modules if m.startswith('radix_evict.cli')]; "
            "print(r.outcome, bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "invalid []"


def test_sglangs_facts_come_from_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict reads which keys a strategy takes from native.py, not from a copy."""
    text = "sglang serve m --radix-eviction-policy slru --radix-eviction-policy-config " \
           "'{\"protected_threshold\": 2, \"spare\": 1}'\n"
    assert "extra_forbidden" in [p.type for p in lint_text(text, "s.sh").problems]
    monkeypatch.setitem(native.STRATEGY_KEYS, "slru", ("protected_threshold", "spare"))
    assert "extra_forbidden" not in [p.type for p in lint_text(text, "s.sh").problems
                                     if p.severity == lint.ERROR]
    monkeypatch.setattr(native, "DEFAULT_POLICY", "lfu")
    problems = lint_text("sglang serve m --radix-eviction-policy-config '{\"x\": 1}'\n",
                         "t.sh").problems
    assert any("SGLang uses lfu" in (p.hint or "") for p in problems)
