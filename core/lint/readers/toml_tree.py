"""Read TOML into a positioned :class:`Node` tree (tomllib's values, placed in the text)."""

from __future__ import annotations

import re
import sys
from typing import Any

from ..text import Source
from .nodes import MAX_DEPTH, LimitExceeded, Node, ParseFailure

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def toml_tree(source: Source) -> Node:
    """TOML through tomllib, as a Node tree placed at each key's first spelling in the text."""
    text = source.text
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:  # before Python 3.14 the line is only in the message
            found = re.search(r"at line (\d+)", str(exc))
            line = int(found.group(1)) if found else None
        offset = None
        if line is not None:
            offset = sum(len(x) + 1 for x in text.split("\n")[: line - 1])
        raise ParseFailure(str(exc), offset) from None
    except RecursionError:
        raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep") from None

    def build(value: Any, at: int, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep", at)
        if isinstance(value, dict):
            node = Node("map", at, source)
            for k, v in value.items():
                m = re.compile(r"[\"']?" + re.escape(str(k)) + r"[\"']?[ \t]*[=.\]]").search(
                    text, at)
                pos = m.start() if m else at
                key = Node("scalar", pos, source, str(k), "", pos + len(str(k)))
                if m and text[m.end() - 1] in ".]":  # a table header or dotted key: inside it
                    vpos = m.end()
                else:
                    vpos = text.find("=", pos)
                    vpos = pos if vpos < 0 else vpos + 1
                while vpos < len(text) and text[vpos] in " \t":
                    vpos += 1
                node.items.append((key, build(v, vpos, depth + 1)))
            return node
        if isinstance(value, list):
            node = Node("seq", at, source)
            node.items = [build(v, at, depth + 1) for v in value]
            return node
        style = ""
        if isinstance(value, str) and at < len(text) and text[at] in "'\"":
            style = text[at]
        end = at + (len(value) + 2 if isinstance(value, str) else 1)
        return Node("scalar", at, source, value, style, end)

    return build(data, 0, 0)
