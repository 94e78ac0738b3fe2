"""The documentation's generated parts agree with the code and with the measured figures.

Everything here runs in-process in well under a second: the pages are
regenerated in memory by docs/generate.py and compared with the committed
ones. The figures themselves are not re-measured (that takes a minute);
their tables are checked against the committed docs/figures/results.json.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from radix_evict import EvictionPolicy, PolicySpec, hookimpl

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FIX = "run `python docs/generate.py all` and commit the result"


def _load_generator() -> ModuleType:
    name = "radix_evict_docs_generate"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


generate = _load_generator()
# The entry point imports the jobs from docs/gen/ (it puts docs/ on sys.path).
from gen import common, figures, references, tables  # noqa: E402


def _committed(path: Path) -> str:
    assert path.exists(), f"{path.relative_to(ROOT)} is missing: {FIX}"
    return path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- policy reference


def test_policy_reference_matches_the_registry() -> None:
    assert _committed(references.POLICIES_PAGE) == references.render_policies(), (
        f"docs/reference/policies.md disagrees with the policy registry: {FIX}"
    )


def test_policy_reference_has_a_section_per_builtin_policy() -> None:
    page = _committed(references.POLICIES_PAGE)
    reg = references.builtin_registry()
    specs = reg.specs()
    assert {"lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"} <= {
        s.name for s in specs
    }
    for spec in specs:
        assert f"\n## `{spec.name}`\n" in page, f"no section for policy {spec.name!r}"
        for key in reg.describe_config(spec.name):
            assert f"| `{key.key}` |" in page, f"{spec.name}: key {key.key!r} undocumented"


class _ExtraPolicy(EvictionPolicy):
    """Not a real policy: stands in for an installed plugin package."""

    name = "docs-test-extra"

    def score(self, node: Any) -> float:
        return 0.0


class _ExtraPlugin:
    @staticmethod
    @hookimpl
    def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name=_ExtraPolicy.name, policy=_ExtraPolicy, summary="extra"))

    @staticmethod
    @hookimpl
    def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
        extend(_ExtraPolicy.name, "fifo")


def test_policy_reference_ignores_installed_plugins() -> None:
    reg = references.builtin_registry()
    reg.add_plugin(_ExtraPlugin, name="docs-test")
    assert _ExtraPolicy.name in reg.choices()
    assert references.render_policies(reg) == references.render_policies()


# --------------------------------------------------------------------------- CLI reference


def test_cli_reference_matches_the_app() -> None:
    assert _committed(references.CLI_PAGE) == references.render_cli(), (
        f"docs/reference/cli.md disagrees with the typer app: {FIX}"
    )


def test_every_cli_command_and_option_is_documented() -> None:
    page = _committed(references.CLI_PAGE)
    group = references.cli_command()
    names = references.cli_commands(group)
    assert {"list", "show", "validate", "lint", "schema", "simulate", "sweep"} <= set(names)
    root = references._context(group, common.PROG)
    for name in names:
        assert f"\n## `radix-evict {name}`\n" in page, f"command {name!r} is undocumented"
        cmd = group.get_command(root, name)
        section = page.split(f"\n## `radix-evict {name}`\n", 1)[1].split("\n## ", 1)[0]
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            for opt in [*param.opts, *param.secondary_opts]:
                if opt.startswith("-"):
                    assert opt in section, f"radix-evict {name} {opt} is undocumented"


# --------------------------------------------------------------------------- figures


def test_figure_tables_match_results_json() -> None:
    results = figures.load_results()
    for path, text in tables.table_pages(results).items():
        assert _committed(path) == text, (
            f"{path.relative_to(ROOT)} disagrees with docs/figures/results.json: "
            "run `python docs/generate.py tables`"
        )


def test_results_cover_the_documented_runs() -> None:
    results = figures.load_results()
    runs = {r["key"]: r for r in results["runs"]}
    assert set(runs) == {"chat", "mooncake-synthetic", "mooncake-conversation"}
    for key, run in runs.items():
        sim = run["simulate"]
        labels = [r["label"] for r in sim["results"]]
        assert labels == ["lru", "lfu", "slru", "priority", "tlru", "oracle"], (key, labels)
        assert sim["recommendation"]["policy"] in labels[:-1], "the oracle is never recommended"
        oracle, ceiling = sim["results"][-1]["hit_rate"], sim["ceiling"]["hit_rate"]
        assert max(r["hit_rate"] for r in sim["results"]) == oracle <= ceiling, key
        if key != "chat":
            assert sim["page_size"] == figures.TRACE_PAGE_SIZE
            assert 0 < figures.TRACE_POOL_TOKENS - sim["pool_tokens"] < figures.TRACE_PAGE_SIZE
            assert f"{figures.TRACES}/" in run["command"], "traces are read in place, never copied"
    png = figures.PLOT.read_bytes()
    assert png.startswith(b"\x89PNG"), "docs/figures/policies.png is not a PNG"


@pytest.mark.parametrize("page", ["choosing.md", "quickstart.md", "results.md"])
def test_no_measured_figure_outside_generated_sections(page: str) -> None:
    text = common.SECTION_RE.sub("", _committed(DOCS / page))
    typed = re.findall(r"\b\d+\.\d+ ?%|\b\d{1,3}(?:,\d{3})+\b", text)
    assert not typed, f"{page}: figures typed by hand outside generated sections: {typed}"


# --------------------------------------------------------------------------- the entry point


def test_generate_check_passes_on_the_committed_pages() -> None:
    assert generate.main(["all", "--check"]) == 0


def test_generate_check_fails_on_a_stale_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = references.render_cli
    monkeypatch.setattr(references, "render_cli", lambda: real() + "stale\n")
    assert generate.main(["cli", "--check"]) == 1
    assert "docs/reference/cli.md" in capsys.readouterr().err


# --------------------------------------------------------------------------- the site


def test_included_files_exist() -> None:
    """Snippet includes (--8<--) point at files of the repository."""
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r'^--8<-- "([^"]+)"', page.read_text(encoding="utf-8"), re.M):
            assert (ROOT / target).is_file(), f"{page.name} includes missing {target}"


def test_nav_lists_every_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        rel = page.relative_to(DOCS).as_posix()
        assert f": {rel}" in nav, f"{rel} is not in mkdocs.yml's nav"
