"""Dockerfile instructions continued over lines, read as Docker does (escape directive included).

Each case failed before continuation lines were joined ahead of parsing: the
exec form's ``\\`` left the JSON unparsable, so it was read as a shell command.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.rigs import run_cli

from radix_evict.lint import lint_paths, lint_text
from radix_evict.lint.readers.dockerfile import escape_char, instructions
from radix_evict.lint.text import Source

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

LAUNCH = 'CMD ["python3", "-m", "sglang.launch_server", \\\n'


def errors(text: str) -> list[tuple[str, int | None, int | None]]:
    report = lint_text(text, "Dockerfile")
    return [(p.type, p.line, p.column) for p in report.problems if report.failing(p)]


def test_continued_exec_form_is_one_json_array() -> None:
    assert errors("FROM python:3.12\n" + LAUNCH + '    "--radix-eviction-policy", "slru"]\n') == []


def test_a_finding_in_a_continued_exec_form_points_at_the_original_line() -> None:
    text = "FROM python:3.12\n" + LAUNCH + '    "--radix-eviction-policy", "nosuch"]\n'
    # line 3, the n of nosuch (inside its quotes)
    assert errors(text) == [("unknown_policy", 3, 33)]


def test_the_cli_agrees(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:3.12\n" + LAUNCH + '    "--radix-eviction-policy", "slru"]\n')
    r = run_cli("lint", str(path))
    assert r.exit_code == 0, r.output
    assert "unknown_option" not in r.output


def test_entrypoint_plus_continued_cmd() -> None:
    text = ('FROM python:3.12\nENTRYPOINT ["python3", "-m", "sglang.launch_server"]\n'
            'CMD ["--model-path", "m", \\\n     "--radix-eviction-policy", \\\n     "nosuch"]\n')
    assert errors(text) == [("unknown_policy", 5, 7)]


@pytest.mark.parametrize("form", ["exec", "shell"])
def test_escape_directive_backtick(form: str) -> None:
    if form == "exec":
        body = ('CMD ["python3", "-m", "sglang.launch_server", `\n'
                '    "--radix-eviction-policy", "nosuch"]\n')
        where = (4, 33)
    else:
        body = ("CMD python3 -m sglang.launch_server `\n"
                "    --radix-eviction-policy nosuch\n")
        where = (4, 29)
    text = "# escape=`\nFROM python:3.12\n" + body
    assert errors(text) == [("unknown_policy", *where)]


def test_comment_and_blank_lines_inside_a_continuation_are_skipped() -> None:
    text = ("FROM python:3.12\n" + LAUNCH + "    # the policy:\n\n"
            '    "--radix-eviction-policy", "lfuu"]\n')
    assert errors(text) == [("unknown_policy", 5, 33)]


def test_directives_count_only_at_the_top() -> None:
    lines = "# a comment\n# escape=`\nFROM x\n"
    assert escape_char(lines, [(0, 11), (12, 22), (23, 29)]) == "\\"
    assert escape_char("#  Escape = `\nFROM x\n", [(0, 13), (14, 20)]) == "`"
    # a backslash is then an ordinary character: the line does not continue
    src = Source("Dockerfile", "# escape=`\nRUN a \\\nCMD b\n")
    assert [t.text for t, _ in instructions(src)] == ["RUN a \\", "CMD b"]


def test_joined_text_maps_back_to_the_file() -> None:
    src = Source("Dockerfile", 'CMD ["a", \\  \r\n  "b"]\r\n')
    ((line, start),) = instructions(src)
    assert line.text == 'CMD ["a",   "b"]' and start == 0
    assert line.where(line.text.index("b")) == (2, 4)


def test_corpus_dockerfiles_still_pass() -> None:
    corpus = Path(__file__).parent / "lint_corpus" / "valid"
    report = lint_paths(sorted(corpus.glob("*Dockerfile*")))
    assert report.outcome == "ok", [str(p) for p in report.problems]
