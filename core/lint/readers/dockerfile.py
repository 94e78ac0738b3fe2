"""Dockerfile ``CMD``/``ENTRYPOINT`` as Docker reads them, with each character's place kept.

Docker's parser (BuildKit's ``frontend/dockerfile/parser``) first reads the
parser directives at the top of the file (``# escape=`` picks the escape
character, backslash or backtick), then joins each instruction's
continuation lines: a line ending in the escape character (trailing blanks
allowed) continues on the next, the escape character and those blanks are
dropped, and comment and blank lines inside the instruction are skipped.
Only then is the instruction's argument read: a JSON array of strings is the
exec form, anything else the shell form (run by ``/bin/sh -c``). The joined
text is a :class:`Text`, so a problem still names the line and column in the
file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..model import Arg, Invocation
from ..text import Source, Text
from .json_tree import parse_json
from .nodes import LimitExceeded, ParseFailure
from .sources import from_words

INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)(?:[ \t]+|$)")
DIRECTIVE = re.compile(r"#[ \t]*([A-Za-z][A-Za-z0-9]*)[ \t]*=[ \t]*(\S+)[ \t]*$")
KNOWN_DIRECTIVES = frozenset({"syntax", "escape", "check"})
ESCAPES = ("\\", "`")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each physical line, without its ``\\r\\n`` or ``\\n``."""
    out = []
    i, n = 0, len(text)
    while i < n:
        end = text.find("\n", i)
        end = n if end < 0 else end
        out.append((i, end - 1 if end > i and text[end - 1] == "\r" else end))
        i = end + 1
    return out


def escape_char(text: str, lines: list[tuple[int, int]]) -> str:
    """The escape character the parser directives set (Docker's default: backslash).

    Directives count only at the very top: the first line that is not one (a
    comment, a blank line, an instruction, an unknown directive) ends them.
    """
    escape = "\\"
    seen: set[str] = set()
    for start, end in lines:
        m = DIRECTIVE.match(text, start, end)
        if m is None:
            break
        name = m.group(1).lower()
        if name not in KNOWN_DIRECTIVES or name in seen:
            break
        seen.add(name)
        if name == "escape" and m.group(2) in ESCAPES:
            escape = m.group(2)
    return escape


def instructions(source: Source) -> Iterator[tuple[Text, int]]:
    """Each instruction with its continuation lines joined, and the offset where it starts."""
    text = source.text
    whole = Text.at(text, source, 0)
    lines = _lines(text)
    continued = re.compile(re.escape(escape_char(text, lines)) + r"[ \t]*$")
    parts: list[tuple[int, int]] = []
    for start, end in lines:
        stripped = text[start:end].lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue  # a comment or blank line, also inside a continued instruction
        m = continued.search(text, start, end)
        if m is not None:
            parts.append((start, m.start()))
            continue
        parts.append((start, end))
        yield whole.join(parts), parts[0][0]
        parts = []
    if parts:  # the file ends inside a continuation
        yield whole.join(parts), parts[0][0]


def dockerfile_invocations(source: Source, base_dir: str) -> Iterator[Invocation]:
    """CMD and ENTRYPOINT of each stage (exec form: a JSON list; shell form: ``sh -c``)."""
    stages: list[dict[str, tuple[list[Arg], bool, int]]] = [{}]
    for line, start in instructions(source):
        m = INSTRUCTION.match(line.text)
        if not m:
            continue
        op = m.group(1).upper()
        if op == "FROM":
            stages.append({})
            continue
        if op not in ("CMD", "ENTRYPOINT"):
            continue
        words, exec_form = _docker_command(line.slice(m.end()))
        stages[-1][op] = (words, exec_form, start)
    for stage in stages:
        entry = stage.get("ENTRYPOINT")
        cmd = stage.get("CMD")
        parts = []
        if entry is not None:
            parts.append(entry)
            if entry[1] and cmd is not None:
                parts.append(cmd)
        elif cmd is not None:
            parts.append(cmd)
        words = [w for p in parts for w in p[0]]
        if not words:
            continue
        first = source.where(parts[0][2])[0]
        names = "+".join(op for op in ("ENTRYPOINT", "CMD") if stage.get(op) in parts)
        yield from from_words(words, f"{names} (line {first})", base_dir)


def _docker_command(body: Text) -> tuple[list[Arg], bool]:
    """Exec form (a JSON array of strings) or shell form (run by ``/bin/sh -c``)."""
    stripped = body.text.strip()
    if stripped.startswith("["):
        lead = len(body.text) - len(body.text.lstrip())
        inner = body.slice(lead)
        try:
            node = parse_json(inner.text.rstrip(), body.source, parent=inner)
        except (ParseFailure, LimitExceeded):
            node = None
        if node is not None and node.kind == "seq" and all(
                n.kind == "scalar" and isinstance(n.value, str) for n in node.items):
            return [Arg(n.text()) for n in node.items], True
    sh = Text("/bin/sh", body.source, [(0, body.offset(0))])
    dash_c = Text("-c", body.source, [(0, body.offset(0))])
    return [Arg(sh), Arg(dash_c), Arg(body)], False
