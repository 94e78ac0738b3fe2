"""Read YAML into positioned :class:`Node` trees from the parser's event stream.

libyaml's parser (``yaml.CSafeLoader``) is used when PyYAML was built with
it, the pure-Python one otherwise; both produce events without recursion, and
the tree is built here with an explicit stack, so nesting is checked as it
is read (a 100,000-level file stops at MAX_DEPTH). Aliases point at their
anchor's node instead of copying it, an alias inside its own anchor is
refused, and scalars resolve to the types ``yaml.safe_load`` gives them.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import yaml
from yaml import events
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from ..text import Source
from .nodes import MAX_DEPTH, LimitExceeded, Node, ParseFailure

Loader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
LIBYAML = Loader is not yaml.SafeLoader
STR_TAG = "tag:yaml.org,2002:str"

_resolver = Resolver()
_constructor = SafeConstructor()


def _scalar_value(event: events.ScalarEvent) -> Any:
    """The Python value ``yaml.safe_load`` gives this scalar (unknown tags: the string)."""
    tag = event.tag
    if tag is None or tag == "!":
        if not event.implicit[0]:
            return event.value
        tag = _resolver.resolve(ScalarNode, event.value, event.implicit)
    if tag == STR_TAG:
        return event.value
    build = _constructor.yaml_constructors.get(tag)
    if build is None:
        return event.value
    node = ScalarNode(tag, event.value, None, None, event.style)
    try:
        return build(_constructor, node)
    except (ConstructorError, ValueError, TypeError):
        return event.value


def _at(mark: Any) -> int:
    """A mark's character offset (both parsers count characters, not bytes)."""
    return int(mark.index) if mark is not None else 0


def parse_yaml(source: Source) -> list[Node | None]:
    """Every document of the file, as trees (None for an empty document).

    Raises ParseFailure for malformed YAML and LimitExceeded past the bounds.
    """
    docs: list[Node | None] = []
    stack: list[tuple[Node, Node | None]] = []  # open container, pending key (mappings)
    open_nodes: set[int] = set()
    anchors: dict[str, Node] = {}
    root: Node | None = None
    have_root = False

    def attach(node: Node) -> None:
        nonlocal root, have_root
        if not stack:
            root, have_root = node, True
            return
        container, key = stack[-1]
        if container.kind == "seq":
            container.items.append(node)
        elif key is None:
            stack[-1] = (container, node)
        else:
            container.items.append((key, node))
            stack[-1] = (container, None)

    scalar_event = events.ScalarEvent
    try:
        for ev in yaml.parse(source.text, Loader=Loader):
            if ev.__class__ is scalar_event:
                node = Node("scalar", _at(ev.start_mark), source, None, ev.style or "",
                            _at(ev.end_mark), ev.value, partial(_scalar_value, ev))
                if ev.anchor:
                    anchors[ev.anchor] = node
                attach(node)
            elif isinstance(ev, (events.MappingStartEvent, events.SequenceStartEvent)):
                if len(stack) >= MAX_DEPTH:
                    raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep",
                                        _at(ev.start_mark))
                kind = "map" if isinstance(ev, events.MappingStartEvent) else "seq"
                node = Node(kind, _at(ev.start_mark), source)
                if ev.anchor:
                    anchors[ev.anchor] = node
                attach(node)
                stack.append((node, None))
                open_nodes.add(id(node))
            elif isinstance(ev, (events.MappingEndEvent, events.SequenceEndEvent)):
                node, _ = stack.pop()
                node.end = _at(ev.end_mark)
                open_nodes.discard(id(node))
            elif isinstance(ev, events.AliasEvent):
                target = anchors.get(ev.anchor or "")
                if target is None:
                    raise ParseFailure(f"found undefined alias *{ev.anchor}",
                                       _at(ev.start_mark))
                if id(target) in open_nodes:
                    raise LimitExceeded(
                        "alias_cycle",
                        f"alias *{ev.anchor} is inside the node its anchor names "
                        "(a structure that contains itself)", _at(ev.start_mark))
                attach(target)
            elif isinstance(ev, events.DocumentEndEvent):
                docs.append(root if have_root else None)
                root, have_root = None, False
                anchors = {}
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        parts = [exc.context, exc.problem]
        detail = ", ".join(str(x) for x in parts if x) or " ".join(str(exc).split())
        offset = mark.index if mark is not None else None
        if "nesting depth" in detail:  # libyaml's own limit (1000 levels), before ours
            raise LimitExceeded("too_deep", f"nested too deep ({detail})", offset) from None
        raise ParseFailure(detail, offset) from None
    except yaml.YAMLError as exc:
        raise ParseFailure(" ".join(str(exc).split()), None) from None
    return docs
