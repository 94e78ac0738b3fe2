"""What a cell reads, by content: the sha256 of its trace and of the files its config names.

A rerun resumes the cells its result file already has, and a cell is found
by its key: a key that named a trace by its path alone would take a trace
rewritten in place for the one measured, and report the old figures as
current. So a cell with input files has an ``inputs`` entry in its key,
``{"trace": "sha256:...", "config.weights": "sha256:..."}``: change a byte
and the cell is another cell. A cell with no input file (a built-in workload,
a config that names no file) keeps the key it always had, byte for byte.

The rest of a cell's inputs are already in its key by value: a cost model
file by its name and coefficients, a grid file by the axes it gives.

Each file is hashed once per run (the digest is remembered by the file's
identity: device, inode, size, modification and change times; a write, or
an ``os.utime`` that puts the old modification time back, moves the change
time), through
:mod:`radix_evict.inputs`: a regular file within the trace size cap.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from radix_evict.inputs import TRACE_BYTES, InputFileError, open_lines
from radix_evict.outputs import Input
from radix_evict.policies.config import named_files
from radix_evict.policies.contract import PolicyConfig
from radix_evict.sim.workloads import TraceFileError

if TYPE_CHECKING:
    from radix_evict.sim.sweep.grid import Cell

__all__ = ["cell_inputs", "cell_reads", "file_digest", "input_files"]

TRACE = "trace"
CONFIG = "config."  # the prefix of a config key's entry: ``config.weights``

_digests: dict[tuple[str, int, int, int, int, int], str] = {}


def file_digest(path: str | os.PathLike[str], what: str) -> str:
    """``sha256:<hex>`` of the file's text (a BOM aside); InputFileError if it cannot be read."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError as exc:
        reason = ("no such file" if isinstance(exc, FileNotFoundError)
                  else f"cannot read: {exc.strerror or exc}")
        raise InputFileError(name, "file_unreadable", reason) from None
    identity = (os.path.realpath(name), info.st_dev, info.st_ino, info.st_size,
                info.st_mtime_ns, info.st_ctime_ns)
    known = _digests.get(identity)
    if known is not None:
        return known
    h = hashlib.sha256()
    for line in open_lines(name, limit=TRACE_BYTES, what=what):
        h.update(line.encode("utf-8"))
    digest = f"sha256:{h.hexdigest()}"
    _digests[identity] = digest
    return digest


def input_files(trace: str | None, config: PolicyConfig | None) -> dict[str, str]:
    """A cell's input files by entry name: its trace, and each file its config names."""
    files = {} if trace is None else {TRACE: trace}
    files.update({CONFIG + key: path for key, path in named_files(config).items()})
    return files


def cell_inputs(files: Mapping[str, str]) -> dict[str, str]:
    """The ``inputs`` entry of a cell's key: each input file's digest, by entry name.

    A trace that cannot be read is a TraceFileError, as when the sweep reads it.
    """
    out: dict[str, str] = {}
    for name, path in sorted(files.items()):
        if name != TRACE:
            out[name] = file_digest(path, "a file a config names")
            continue
        try:
            out[name] = file_digest(path, "a trace")
        except InputFileError as exc:
            raise TraceFileError(path, None, exc.reason) from None
    return out


def cell_reads(cells: Iterable[Cell]) -> list[Input]:
    """Every file ``cells`` read, once each, named for messages (no output may be one)."""
    out: dict[str, Input] = {}
    for c in cells:
        trace = c.source.name if c.source.kind == "trace" else None
        for name, path in input_files(trace, c.config).items():
            label = "a trace of the sweep" if name == TRACE else \
                f"{c.policy}'s {name.removeprefix(CONFIG)}"
            out.setdefault(path, Input(label, Path(path)))
    return list(out.values())
