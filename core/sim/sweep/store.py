"""Result files: rows written as cells finish, read back to resume a sweep.

``.jsonl`` and ``.csv`` get one appended line per finished cell (flushed, so
a crash or Ctrl-C keeps every finished cell); ``.parquet`` (with pyarrow) is
rewritten whole after each cell, through a temporary file and a rename, so
it is never half written. A file may hold several rows of one cell (a
failed cell that a rerun retried): the last one counts.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from radix_evict.errors import RadixEvictError
from radix_evict.sim.sweep.rows import FIELD_TYPES, OK, ROW_FIELDS

SUFFIXES = (".jsonl", ".csv", ".parquet")


class ResultFileError(RadixEvictError, ValueError):
    """A result file that cannot be read back or written: says which file and why."""


def check_path(path: Path) -> str:
    """The file's format (its suffix); raises ResultFileError for names we cannot write."""
    fmt = path.suffix.lower()
    if fmt not in SUFFIXES:
        raise ResultFileError(f"{path}: use a file name ending in {', '.join(SUFFIXES)}")
    if fmt == ".parquet":
        _pyarrow(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ResultFileError(f"{path}: directory {parent} does not exist")
    if path.is_dir():
        raise ResultFileError(f"{path}: is a directory")
    return fmt


def _pyarrow(path: Path) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ResultFileError(f"{path}: writing Parquet needs pyarrow (pip install pyarrow); "
                              "or use .jsonl or .csv") from None
    return pyarrow


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A row for CSV and Parquet: dict fields as JSON text."""
    return {k: (None if row.get(k) is None else json.dumps(row[k], sort_keys=True))
            if FIELD_TYPES[k] == "json" else row.get(k) for k in ROW_FIELDS}


def _typed(path: Path, line: int, raw: dict[str, Any]) -> dict[str, Any]:
    """A row read from CSV (all text) or Parquet (JSON text fields) with its types back."""
    missing = [k for k in ("cell", "status") if k not in raw]
    if missing:
        raise ResultFileError(f"{path}:{line}: not a sweep row (no {', '.join(missing)} column)")
    out: dict[str, Any] = {}
    for key in ROW_FIELDS:
        value = raw.get(key)
        kind = FIELD_TYPES[key]
        try:
            if value is None or value == "":
                out[key] = None
            elif kind == "json":
                out[key] = json.loads(value) if isinstance(value, str) else value
            elif kind == "int":
                out[key] = int(value)
            elif kind == "float":
                out[key] = float(value)
            else:
                out[key] = str(value)
        except ValueError:
            raise ResultFileError(f"{path}:{line}: column {key}: cannot read {value!r}") from None
    return out


class ResultFile:
    """The rows already in ``path`` (if it exists), and a writer that adds more."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.format = check_path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        self._fh: IO[str] | None = None
        self._csv: Any = None
        if path.exists():
            for row in self._read():
                self.rows[row["cell"]] = row

    # ------------------------------------------------------------------ reading
    def _read(self) -> Iterable[dict[str, Any]]:
        if self.format == ".parquet":
            table = _pyarrow(self.path).parquet.read_table(self.path)
            return [_typed(self.path, i, r) for i, r in enumerate(table.to_pylist(), 1)]
        text = self._text()
        if self.format == ".csv":
            reader = csv.DictReader(io.StringIO(text))
            if reader.fieldnames is not None and list(reader.fieldnames) != list(ROW_FIELDS):
                raise ResultFileError(
                    f"{self.path}: its columns are not this version's sweep columns "
                    f"({', '.join(ROW_FIELDS)}); write to a new file")
            return [_typed(self.path, i, r) for i, r in enumerate(reader, 2)]
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                raise ResultFileError(f"{self.path}:{i}: not a JSON row") from None
            if not isinstance(data, dict):
                raise ResultFileError(f"{self.path}:{i}: not a JSON object")
            rows.append(_typed(self.path, i, {k: v for k, v in data.items()}))
        return rows

    def _text(self) -> str:
        """The file's complete lines: a last line cut short (a killed writer) is dropped."""
        text = self.path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
            self.path.write_text(text, encoding="utf-8")
        return text

    def finished(self) -> set[str]:
        """Keys of the cells that ran (a failed cell is run again)."""
        return {k for k, r in self.rows.items() if r.get("status") == OK}

    # ------------------------------------------------------------------ writing
    def add(self, row: dict[str, Any]) -> None:
        """Record one finished cell, on disk before this returns."""
        self.rows[row["cell"]] = row
        if self.format == ".parquet":
            self._rewrite_parquet()
            return
        if self._fh is None:
            new = not self.path.exists() or self.path.stat().st_size == 0
            self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115
            if self.format == ".csv":
                self._csv = csv.DictWriter(self._fh, fieldnames=list(ROW_FIELDS))
                if new:
                    self._csv.writeheader()
        if self._csv is not None:
            self._csv.writerow(_flat(row))
        else:
            self._fh.write(json.dumps(row, sort_keys=False, allow_nan=False) + "\n")
        self._fh.flush()

    def _rewrite_parquet(self) -> None:
        pa = _pyarrow(self.path)
        types = {"str": pa.string(), "json": pa.string(), "int": pa.int64(),
                 "float": pa.float64()}
        schema = pa.schema([(k, types[t]) for k, t in FIELD_TYPES.items()])
        table = pa.Table.from_pylist([_flat(r) for r in self.rows.values()], schema=schema)
        tmp = self.path.with_name(self.path.name + ".tmp")
        pa.parquet.write_table(table, tmp)
        os.replace(tmp, self.path)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            self._csv = None

    def __enter__(self) -> ResultFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
