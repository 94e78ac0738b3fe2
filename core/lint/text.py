"""Strings that remember where each character came from, so problems get ``line:column``.

A word of a shell command, a YAML block scalar or a JSON string inside an
argument list is a :class:`Text`: its characters map back to offsets in the
file (through quotes, escapes, indentation and line folds). Offsets turn into
1-based line and column numbers through :class:`Source`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Source:
    """One file's text; ``where(offset)`` gives its 1-based line and column."""

    path: str
    text: str
    _starts: list[int] = field(default_factory=list, repr=False)

    def where(self, offset: int) -> tuple[int, int]:
        if not self._starts:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._starts = starts
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1


class Text:
    """A string whose character ``i`` sits at ``offset(i)`` in a :class:`Source`.

    ``pieces`` are ``(index, origin)`` pairs, sorted by index: character ``i``
    of the piece that starts at ``index`` comes from ``origin + (i - index)``,
    an offset in the source (``parent`` None) or an index into ``parent``.
    Offsets are worked out only when a problem needs one.
    """

    __slots__ = ("_parent", "_pieces", "_starts", "source", "text")

    def __init__(self, text: str, source: Source, pieces: Sequence[tuple[int, int]],
                 parent: Text | None = None) -> None:
        self.text = text
        self.source = source
        self._pieces = list(pieces) or [(0, 0)]
        self._starts = [p[0] for p in self._pieces]
        self._parent = parent

    @classmethod
    def at(cls, text: str, source: Source, offset: int) -> Text:
        """A string that appears verbatim at ``offset``."""
        return cls(text, source, [(0, offset)])

    def offset(self, i: int = 0) -> int:
        """The source offset of character ``i`` (the end maps just past the last one)."""
        k = max(bisect.bisect_right(self._starts, i) - 1, 0)
        index, origin = self._pieces[k]
        inner = origin + (i - index)
        return self._parent.offset(inner) if self._parent is not None else inner

    def where(self, i: int = 0) -> tuple[int, int]:
        return self.source.where(self.offset(i))

    def slice(self, start: int, end: int | None = None) -> Text:
        """Characters ``start:end`` as a Text of their own."""
        end = len(self.text) if end is None else end
        return Text(self.text[start:end], self.source, [(0, start)], parent=self)

    def join(self, parts: Sequence[tuple[int, int]]) -> Text:
        """A new string made of ``(start, end)`` ranges of this one (a shell word)."""
        pieces: list[tuple[int, int]] = []
        chunks: list[str] = []
        n = 0
        for start, end in parts:
            if end <= start:
                continue
            pieces.append((n, start))
            chunks.append(self.text[start:end])
            n += end - start
        return Text("".join(chunks), self.source, pieces or [(0, parts[0][0] if parts else 0)],
                    parent=self)

    def __repr__(self) -> str:
        return f"Text({self.text!r})"


SKIP_PLAIN = frozenset(" \t\r\n")


def aligned(value: str, raw: str, style: str, source: Source, base: int) -> Text:
    """Map a YAML/JSON scalar's value onto its raw source text ``raw`` (at ``base``).

    The value's characters appear in the raw text in order, apart from what
    quoting, escapes, indentation and folding add or change; a greedy walk
    skips what the style adds (whitespace, escape backslashes, doubled single
    quotes) and maps each value character to its raw counterpart, which is
    exact for everything but rare escapes (``\\u00e9``), mapped to the escape.
    """
    j = 0
    if style in ("|", ">"):
        j = raw.find("\n") + 1 or len(raw)
    elif style in ("'", '"'):
        j = 1
    skip_backslash = style == '"'
    pieces: list[tuple[int, int]] = []
    last_i = last_j = -2
    n = len(raw)
    for i, c in enumerate(value):
        while j < n and raw[j] != c:
            r = raw[j]
            if c == " " and r == "\n":
                break
            if r in SKIP_PLAIN or (skip_backslash and r == "\\") or (style == "'" and r == "'"):
                j += 1
                continue
            break
        pos = min(j, n - 1) if n else 0
        if not (i == last_i + 1 and pos == last_j + 1):
            pieces.append((i, base + pos))
        last_i, last_j = i, pos
        if j < n:
            j += 1
    return Text(value, source, pieces or [(0, base + min(j, max(n - 1, 0)))])
