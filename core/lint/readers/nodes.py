"""The positioned document tree lint reads YAML and JSON into, and the limits on it.

Every mapping, sequence and scalar remembers its offset in the file, so a
problem names ``line:column``. Aliases share one node (a "billion laughs"
file stays small); turning a subtree into Python values is budgeted, and
nesting is limited while the tree is built, so no file costs unbounded time,
memory or recursion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from radix_evict.errors import short_value as short
from radix_evict.inputs import LINT_BYTES

from ..text import Source, Text, aligned

MAX_DEPTH = 200          # nesting levels; real configs use a dozen
MAX_VALUE_NODES = 10_000  # nodes one value may expand to through aliases
MAX_BYTES = LINT_BYTES  # per file (radix_evict.inputs' cap for lint targets)


class LimitExceeded(Exception):
    """Input past one of lint's bounds; ``offset`` is where it was noticed."""

    def __init__(self, kind: str, msg: str, offset: int | None = None) -> None:
        super().__init__(msg)
        self.kind = kind
        self.msg = msg
        self.offset = offset


class ParseFailure(Exception):
    """Malformed input at ``offset`` of the text being parsed."""

    def __init__(self, msg: str, offset: int | None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.offset = offset


class Node:
    """A mapping (``items`` of key/value node pairs), sequence (``items`` of nodes) or scalar."""

    __slots__ = ("_resolve", "_text", "_value", "end", "items", "kind", "parent", "raw",
                 "source", "start", "style")

    def __init__(self, kind: str, start: int, source: Source, value: Any = None,
                 style: str = "", end: int = 0, raw: str | None = None,
                 resolve: Callable[[], Any] | None = None) -> None:
        self.kind = kind
        self._value = value
        # The scalar as written (a YAML scalar's text before typing), for cheap searches.
        self.raw = raw if raw is not None else (value if isinstance(value, str) else None)
        self._resolve = resolve
        self.start = start
        self.end = end
        self.items: list[Any] = []
        self.style = style
        self.source = source
        self._text: Text | None = None
        self.parent: Text | None = None  # set when the node was parsed out of a Text

    @property
    def value(self) -> Any:
        """The scalar's Python value (typed on first use, as ``yaml.safe_load`` types it)."""
        if self._resolve is not None:
            self._value, self._resolve = self._resolve(), None
        return self._value

    @property
    def is_map(self) -> bool:
        return self.kind == "map"

    @property
    def is_seq(self) -> bool:
        return self.kind == "seq"

    def offset(self) -> int:
        return self.parent.offset(self.start) if self.parent is not None else self.start

    def text(self) -> Text:
        """A string scalar's value with each character's position (also in block scalars)."""
        if self._text is None:
            value = self.value if isinstance(self.value, str) else str(self.value)
            if self.parent is not None:
                raw = self.parent.text[self.start:self.end]
                inner = aligned(value, raw, self.style, self.source, 0)
                self._text = Text(value, self.source, _relative(inner, self.start),
                                  parent=self.parent)
            else:
                raw = self.source.text[self.start:self.end]
                self._text = aligned(value, raw, self.style, self.source, self.start)
        return self._text

    def get(self, key: str) -> Node | None:
        """The value node under a string key (the last one if the key repeats)."""
        found = None
        for k, v in self.items:
            if k.value == key:
                found = v
        return found

    def duplicates(self) -> list[tuple[Node, Node]]:
        """Keys that appear twice in this mapping: (first key node, repeated key node)."""
        seen: dict[Any, Node] = {}
        out = []
        for k, _ in self.items:
            if k.kind != "scalar":
                continue
            try:
                first = seen.setdefault(k.value, k)
            except TypeError:
                continue
            if first is not k:
                out.append((first, k))
        return out


def _relative(text: Text, shift: int) -> list[tuple[int, int]]:
    return [(i, origin + shift) for i, origin in text._pieces]


def to_python(node: Node, budget: list[int] | None = None) -> Any:
    """The node's value as plain Python, refusing expansions past MAX_VALUE_NODES."""
    budget = [MAX_VALUE_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        raise LimitExceeded(
            "value_too_large",
            f"a value expands to more than {MAX_VALUE_NODES} nodes (through aliases?)",
            node.offset())
    if node.kind == "scalar":
        return node.value
    if node.kind == "seq":
        return [to_python(n, budget) for n in node.items]
    out: dict[Any, Any] = {}
    for k, v in node.items:
        key = to_python(k, budget)
        try:
            out[key] = to_python(v, budget)
        except TypeError:  # an unhashable (mapping) key: keep it readable
            out[repr(key)] = to_python(v, budget)
    return out


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUE_NODES", "LimitExceeded", "Node", "ParseFailure",
           "short", "to_python"]
