"""A JSON reader that keeps positions, with Python's ``json`` grammar and bounded nesting.

It accepts exactly what ``json.loads`` accepts (``NaN``/``Infinity`` too;
strings through ``json.decoder.scanstring``), builds :class:`Node` trees
whose nodes know their offsets, records repeated keys instead of silently
keeping the last, and refuses nesting deeper than MAX_DEPTH without
recursion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json import decoder

from ..text import Source, Text
from .nodes import MAX_DEPTH, LimitExceeded, Node, ParseFailure

NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
SPACE = re.compile(r"[ \t\n\r]*")
# The decoder's own string scanner (C when available): exact escapes and errors.
scanstring: Callable[[str, int, bool], tuple[str, int]] = decoder.scanstring  # type: ignore[attr-defined]
LITERALS = {"true": True, "false": False, "null": None,
            "NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def parse_json(s: str, source: Source, parent: Text | None = None) -> Node:
    """Parse one JSON document; offsets are indices into ``s`` (a Text's string if parent)."""
    n = len(s)
    i = SPACE.match(s, 0).end()  # type: ignore[union-attr]
    # Each stack entry: the open container and, for a mapping, the pending key node.
    stack: list[tuple[Node, Node | None]] = []
    root: Node | None = None

    def make(kind: str, start: int, value: object = None, style: str = "", end: int = 0) -> Node:
        node = Node(kind, start, source, value, style, end)
        node.parent = parent
        return node

    def attach(node: Node) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        container, key = stack[-1]
        if container.kind == "seq":
            container.items.append(node)
        else:
            assert key is not None
            container.items.append((key, node))
            stack[-1] = (container, None)

    expect_value = True
    while True:
        if i >= n:
            if root is not None and not stack:
                return root
            raise ParseFailure("unexpected end of JSON", n)
        c = s[i]
        if expect_value:
            if c in "{[":
                if len(stack) >= MAX_DEPTH:
                    raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep", i)
                node = make("map" if c == "{" else "seq", i)
                attach(node)
                stack.append((node, None))
                i = SPACE.match(s, i + 1).end()  # type: ignore[union-attr]
                close = "}" if c == "{" else "]"
                if i < n and s[i] == close:
                    stack.pop()
                    node.end = i + 1
                    i += 1
                    expect_value = False
                elif c == "{":
                    i = _key(s, i, stack, make)
                continue
            if c == '"':
                try:
                    string, end = scanstring(s, i + 1, True)
                except ValueError as exc:
                    raise ParseFailure(_msg(exc), getattr(exc, "pos", i)) from None
                attach(make("scalar", i, string, '"', end))
                i = end
            else:
                m = NUMBER.match(s, i)
                if m and m.end() > i:
                    text = m.group(0)
                    number = float(text) if (m.group(2) or m.group(3)) else int(text)
                    attach(make("scalar", i, number, "", m.end()))
                    i = m.end()
                else:
                    for word, literal in LITERALS.items():
                        if s.startswith(word, i):
                            attach(make("scalar", i, literal, "", i + len(word)))
                            i += len(word)
                            break
                    else:
                        raise ParseFailure("expecting a value", i)
            expect_value = False
            continue
        # after a value: ',' or a closing bracket, or the end of the document
        i = SPACE.match(s, i).end()  # type: ignore[union-attr]
        if not stack:
            if i < n:
                raise ParseFailure("extra data after the JSON value", i)
            continue
        if i >= n:
            raise ParseFailure("unexpected end of JSON", n)
        container, _ = stack[-1]
        c = s[i]
        close = "}" if container.kind == "map" else "]"
        if c == ",":
            i = SPACE.match(s, i + 1).end()  # type: ignore[union-attr]
            if container.kind == "map":
                i = _key(s, i, stack, make)
            expect_value = True
        elif c == close:
            container.end = i + 1
            stack.pop()
            i += 1
        else:
            want = "',' or '}'" if close == "}" else "',' or ']'"
            raise ParseFailure(f"expecting {want}", i)


def _key(s: str, i: int, stack: list[tuple[Node, Node | None]], make: object) -> int:
    """Read ``"key":`` at ``i``; leaves the key pending on the top of the stack."""
    if i >= len(s) or s[i] != '"':
        raise ParseFailure("expecting a property name in double quotes", i)
    try:
        value, end = scanstring(s, i + 1, True)
    except ValueError as exc:
        raise ParseFailure(_msg(exc), getattr(exc, "pos", i)) from None
    key = make("scalar", i, value, '"', end)  # type: ignore[operator]
    j = SPACE.match(s, end).end()  # type: ignore[union-attr]
    if j >= len(s) or s[j] != ":":
        raise ParseFailure("expecting ':' delimiter", j)
    container, _ = stack[-1]
    stack[-1] = (container, key)
    return SPACE.match(s, j + 1).end()  # type: ignore[union-attr]


def _msg(exc: ValueError) -> str:
    return str(getattr(exc, "msg", exc))
