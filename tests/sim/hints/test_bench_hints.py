"""bench/bench_hints.py: tables and goal verdicts from given cells; docs/hints.md's sections.

Nothing is replayed here: the cells are made up, so each verdict is known.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    name = "radix_evict_bench_hints"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "bench_hints.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


B = _bench()
POOL = B.GOAL_POOL


def _session(trace: str, full: float, half: float, wrong: float) -> list[object]:
    """lru 10%, oracle 30%: gap closed ``full``/``half``; error 0.1 at ``wrong`` points."""
    lru, ora = 0.10, 0.30
    cells = [B.Cell(trace, POOL, "lru", "-", None, None, lru, 0.0),
             B.Cell(trace, POOL, "oracle", "-", None, None, ora, 1.0)]
    for cov, gap in ((1.0, full), (0.5, half)):
        cells.append(B.Cell(trace, POOL, "session", "session-end", cov, 0.0,
                            lru + gap * (ora - lru), gap))
        cells.append(B.Cell(trace, POOL, "session", "session-end", cov, 0.1,
                            lru + wrong / 100, None))
    return cells


def _parts(full: float, p99: float, written: float, hit: float) -> dict[str, list[object]]:
    sess = _session("conversation", full, 0.12, -0.5) + _session("synthetic", 0.3, 0.2, 0.1)
    ag = [B.Cell("agentic", 1, "lru", "-", None, None, 0.5, p99_ttft_ms=1000.0),
          B.Cell("agentic", 1, "oracle", "-", None, None, 0.6, p99_ttft_ms=500.0),
          B.Cell("agentic", 1, "retain", "next-request", 1.0, 0.0, 0.55, p99_ttft_ms=p99)]
    adm = [B.Cell("conversation", 1, "lru", "write_through", None, None, 0.26,
                  extra={"written_tokens": 100}),
           B.Cell("conversation", 1, "lru", "write_through + tinylfu", None, None, hit,
                  extra={"written_tokens": written})]
    return {"session": sess, "agentic": ag, "admission": adm}


def test_goals_met_say_yes() -> None:
    table = B.goals_table(_parts(full=0.25, p99=700.0, written=40, hit=0.255))
    assert "**no**" not in table and table.count("| yes |") == 7


@pytest.mark.parametrize(("kw", "needle"), [
    ({"full": 0.15, "p99": 700.0, "written": 40, "hit": 0.255}, "coverage 1: gap closed"),
    ({"full": 0.25, "p99": 900.0, "written": 40, "hit": 0.255}, "p99 TTFT against lru"),
    ({"full": 0.25, "p99": 700.0, "written": 60, "hit": 0.255}, "admission"),
    ({"full": 0.25, "p99": 700.0, "written": 40, "hit": 0.24}, "admission"),
])
def test_a_goal_missed_says_no(kw: dict[str, float], needle: str) -> None:
    table = B.goals_table(_parts(**kw))
    missed = [line for line in table.splitlines() if "**no**" in line]
    assert len(missed) == 1 and needle in missed[0]


def test_write_docs_replaces_only_its_section(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("a\n<!-- bench:x -->\nold\n<!-- /bench:x -->\nb\n", encoding="utf-8")
    B.write_docs({"x": "new | table"}, page)
    assert page.read_text(encoding="utf-8") == (
        "a\n<!-- bench:x -->\n\nnew | table\n\n<!-- /bench:x -->\nb\n")
    with pytest.raises(SystemExit, match="bench:y"):
        B.write_docs({"y": "z"}, page)


def test_the_hints_page_has_every_section_filled() -> None:
    text = (ROOT / "docs" / "hints.md").read_text(encoding="utf-8")
    for name in ("session-conversation", "session-synthetic", "session-chat", "session-timed",
                 "agentic", "admission", "goals"):
        body = text.split(f"<!-- bench:{name} -->", 1)[1].split(f"<!-- /bench:{name} -->")[0]
        assert "`python bench/bench_hints.py" in body and "|---" in body, name
