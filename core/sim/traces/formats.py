"""Trace formats, found like policies: through an entry-point group.

A format is a :class:`TraceFormat` subclass named by an entry point in the
group ``radix_evict.trace_formats``; radix-evict's own three (``mooncake``,
``bailian``, ``servegen``) are declared there like any other package's::

    [project.entry-points."radix_evict.trace_formats"]
    myformat = "mypkg.traces:MyFormat"

:func:`open_trace` reads the first record of a file and picks the format
whose required fields it has (the one that requires the most fields, when
several fit: a Bailian record also has every Mooncake field); a record that
fits none is a :class:`~radix_evict.sim.workloads.TraceError` listing what each
format expects. ``fmt=NAME`` skips the detection.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import Any, ClassVar

from radix_evict.errors import RadixEvictError
from radix_evict.sim.workloads import TraceError, TraceFileError, TraceParams, Workload
from radix_evict.sim.workloads.trace import _lines, json_record

GROUP = "radix_evict.trace_formats"


class TraceFormatError(RadixEvictError, ValueError):
    """An unknown format name, or a format entry point that does not load."""


class TraceFormat:
    """One trace format: the fields that identify it, its block size, its reader."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    fields: ClassVar[tuple[str, ...]] = ()  # required in every record
    block_size: ClassVar[int | None] = None  # tokens per hash_id block, when the format fixes it

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether ``record`` (a file's first) has every field this format requires."""
        return all(k in record for k in self.fields)

    def load(self, path: str, params: TraceParams) -> Workload:
        """Read and validate the whole file (raise TraceError naming file and line)."""
        raise NotImplementedError

    def describe(self) -> str:
        size = f"{self.block_size}-token blocks" if self.block_size else "set --block-size"
        return f"{self.name} ({', '.join(self.fields)}; {size})"


def trace_formats() -> dict[str, TraceFormat]:
    """Every installed format by name, in entry-point order (radix-evict's own first)."""
    found: dict[str, TraceFormat] = {}
    eps = sorted(entry_points(group=GROUP), key=lambda ep: (ep.dist is None or
                 ep.dist.name != "radix-evict", ep.name))
    for ep in eps:
        try:
            cls = ep.load()
        except Exception as exc:  # a broken third-party package: say which one
            raise TraceFormatError(
                f"trace format entry point {ep.name!r} ({ep.value}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, TraceFormat)):
            raise TraceFormatError(f"trace format entry point {ep.name!r} ({ep.value}) is not "
                                   "a TraceFormat subclass")
        fmt = cls()
        found[fmt.name or ep.name] = fmt
    return found


def _first_record(path: str) -> dict[str, Any]:
    for n, line in _lines(path):
        if not line.strip():
            continue
        return json_record(path, n, line)
    raise TraceError(path, None, "no requests")


def detect_format(path: str, formats: dict[str, TraceFormat] | None = None) -> TraceFormat:
    """The format of ``path``'s first record; TraceError listing every format's fields."""
    formats = trace_formats() if formats is None else formats
    rec = _first_record(path)
    fits = [f for f in formats.values() if f.matches(rec)]
    if not fits:
        expected = "; ".join(f.describe() for f in formats.values())
        keys = ", ".join(sorted(rec)) or "none"
        raise TraceError(path, None, f"trace format not recognised: the first record has "
                         f"fields {keys}; expected one of: {expected}")
    return max(fits, key=lambda f: len(f.fields))


def open_trace(path: str | os.PathLike[str], fmt: str | None = None,
               block_size: int | None = None, limit: int = 0, **params: Any) -> Workload:
    """Read a trace in any installed format (``fmt=None``: detect it from the first record).

    ``block_size`` overrides the format's own; a format that fixes none needs it.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise TraceFileError(path, None, "is a directory, expected a JSONL trace")
    formats = trace_formats()
    if fmt is None:
        chosen = detect_format(path, formats)
    elif fmt in formats:
        chosen = formats[fmt]
    else:
        raise TraceFormatError(f"unknown trace format {fmt!r} (formats: {', '.join(formats)})")
    size = block_size if block_size is not None else chosen.block_size
    if size is None:
        raise TraceFormatError(f"trace format {chosen.name!r} does not fix a block size: "
                               "give --block-size")
    return chosen.load(path, TraceParams(block_size=size, limit=limit, **params))
