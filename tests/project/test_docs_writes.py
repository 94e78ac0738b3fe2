"""The docs generator writes each generated file whole or not at all (issue #36)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen.common import write_if_changed  # noqa: E402


def test_a_page_that_fails_to_render_keeps_the_old_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# the committed page\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_if_changed(page, "# half \udc80 written")  # fails while it is being written
    assert page.read_text(encoding="utf-8") == "# the committed page\n"
    assert write_if_changed(page, "# new\n") and page.read_text(encoding="utf-8") == "# new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]  # no temporary left
