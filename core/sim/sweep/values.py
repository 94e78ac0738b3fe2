"""The value syntax of a sweep axis: lists, ranges and ``1M``-style token counts.

One syntax for the command line and for string values in grid files:

- ``1,2,4,8``: a list; items are JSON when they parse (numbers, booleans,
  ``null``, ``[1, 2]``), else plain strings. Commas inside brackets or quotes
  do not split.
- ``512..4096*2``: a geometric range (512, 1024, 2048, 4096); ``1..10+3`` an
  arithmetic one (1, 4, 7, 10); ``1..4`` steps by one. The end is included
  when the steps land on it.
- Counts (pool sizes, range bounds) take ``K``/``M``/``G`` (10^3, 10^6, 10^9)
  or ``Ki``/``Mi``/``Gi`` (2^10, 2^20, 2^30): ``1M`` is 1,000,000 tokens.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from radix_evict.errors import RadixEvictError

# A range is capped so that a typo (1..1M) fails instead of building a million cells.
MAX_RANGE_ITEMS = 10_000
SUFFIXES = {
    "k": 10**3, "m": 10**6, "g": 10**9,
    "ki": 2**10, "mi": 2**20, "gi": 2**30,
}
_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?)?\s*$", re.IGNORECASE)
_RANGE_RE = re.compile(r"^(?P<start>[^.]+)\.\.(?P<stop>[^*+]+)(?:(?P<op>[*+])(?P<step>.+))?$")


class SweepValueError(RadixEvictError, ValueError):
    """An axis value that cannot be read; the message quotes it and says what is wanted."""


def parse_count(text: str | int, what: str = "count") -> int:
    """``4096``, ``1M``, ``1.5M``, ``64Ki`` -> an int; anything else is a SweepValueError."""
    if isinstance(text, bool):
        raise SweepValueError(f"{what}: expected a whole number, got {text!r}")
    if isinstance(text, int):
        return text
    m = _COUNT_RE.match(str(text))
    if m is None:
        raise SweepValueError(
            f"{what}: {text!r} is not a whole number (digits, optionally with K, M, G, "
            "Ki, Mi or Gi: 512, 64K, 1M, 1.5M, 64Ki)"
        )
    number, suffix = Decimal(m.group(1)), (m.group(2) or "").lower()
    value = number * SUFFIXES.get(suffix, 1)
    if value != value.to_integral_value():
        raise SweepValueError(f"{what}: {text!r} is not a whole number of tokens")
    return int(value)


def split_top_level(text: str) -> list[str]:
    """Split on commas that are outside brackets, braces and quotes."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    current: list[str] = []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def expand_range(text: str) -> list[int] | None:
    """The items of ``A..B``, ``A..B*k`` or ``A..B+k``; None when ``text`` is not a range."""
    m = _RANGE_RE.match(text.strip())
    if m is None:
        return None
    start = parse_count(m.group("start").strip(), f"range {text!r}")
    stop = parse_count(m.group("stop").strip(), f"range {text!r}")
    op = m.group("op") or "+"
    step = parse_count(m.group("step").strip(), f"range {text!r}") if m.group("step") else 1
    if stop < start:
        raise SweepValueError(f"range {text!r}: the end {stop} is below the start {start}")
    if op == "*" and (step < 2 or start < 1):
        raise SweepValueError(f"range {text!r}: a '*' range needs a start >= 1 and a factor >= 2")
    if op == "+" and step < 1:
        raise SweepValueError(f"range {text!r}: a '+' step must be >= 1")
    out: list[int] = []
    value = start
    while value <= stop:
        out.append(value)
        if len(out) > MAX_RANGE_ITEMS:
            raise SweepValueError(f"range {text!r}: more than {MAX_RANGE_ITEMS:,} values")
        value = value * step if op == "*" else value + step
    return out


def parse_item(text: str) -> Any:
    """One list item: JSON when it parses, else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_values(text: str, what: str = "value") -> list[Any]:
    """A comma list whose items may be ranges: ``1,2,8..32*2`` -> [1, 2, 8, 16, 32]."""
    items = split_top_level(text)
    if any(not item for item in items):
        raise SweepValueError(f"{what}: empty item in {text!r}")
    out: list[Any] = []
    for item in items:
        expanded = expand_range(item) if ".." in item else None
        if expanded is not None:
            out.extend(expanded)
        else:
            out.append(parse_item(item))
    return out


def parse_counts(text: str | int | list[Any], what: str) -> list[int]:
    """A list of counts (``1M,2M,4M`` or ``1M..16M*2``, or a list from a grid file)."""
    items: list[Any]
    if isinstance(text, list):
        items = text
    elif isinstance(text, int) and not isinstance(text, bool):
        items = [text]
    else:
        items = []
        for part in split_top_level(str(text)):
            if not part:
                raise SweepValueError(f"{what}: empty item in {text!r}")
            expanded = expand_range(part) if ".." in part else None
            items.extend([part] if expanded is None else expanded)
    return [parse_count(item, what) for item in items]


def parse_numbers(text: str | float | list[Any], what: str) -> list[float | int]:
    """Finite numbers (``1,2,4``, ``0.5``, ``1..8*2``, or a list from a grid file).

    Whether they are in range (a rate > 0) is the caller's check; a word, a
    boolean or an infinity is refused here, naming ``what``.
    """
    if isinstance(text, list):
        items: list[Any] = []
        for item in text:
            items.extend(parse_values(item, what) if isinstance(item, str) else [item])
    elif isinstance(text, str):
        items = parse_values(text, what)
    else:
        items = [text]
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(item):
            raise SweepValueError(f"{what}: expected numbers, got {item!r}")
    return items


def parse_vary(values: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    """``-g POLICY.KEY=V1,V2,...`` values -> {policy: {key: values}}; a key given twice fails."""
    out: dict[str, dict[str, list[Any]]] = {}
    for raw in values:
        head, sep, text = raw.partition("=")
        policy, dot, key = head.strip().partition(".")
        if not sep or not dot or not policy or not key or not text.strip():
            raise SweepValueError(f"-g {raw!r}: expected POLICY.KEY=V1,V2,... (e.g. "
                                  "slru.protected_threshold=1,2,4 or tlru.threshold=512..4096*2)")
        if key in out.get(policy, {}):
            raise SweepValueError(f"-g {policy}.{key} given twice; list every value in one -g")
        out.setdefault(policy, {})[key] = parse_values(text.strip(), f"-g {policy}.{key}")
    return out


def counts_of(values: Sequence[str] | None, option: str) -> list[int] | None:
    """Every count of a repeatable ``N1,N2`` / range option (None: not given)."""
    return [n for v in values for n in parse_counts(v, option)] if values else None


def numbers_of(values: Sequence[str] | None, option: str) -> list[float] | None:
    """Every number of a repeatable ``R1,R2`` / range option (None: not given)."""
    return [float(n) for v in values for n in parse_numbers(v, option)] if values else None


def names_of(values: Sequence[str] | None) -> list[str] | None:
    """Every name of a repeatable ``A,B`` option (None: none given)."""
    names = [n for v in values or () for n in split_top_level(v) if n]
    return names or None
