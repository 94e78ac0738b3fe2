"""Result files: rows written as cells finish, read back to resume a sweep.

``.jsonl`` and ``.csv`` get one appended line per finished cell (flushed, so
a crash or Ctrl-C keeps every finished cell); ``.parquet`` (with pyarrow) is
rewritten whole after each cell, through a temporary file and a rename, so
it is never half written. A file may hold several rows of one cell (a
failed cell that a rerun retried): the last one counts.

Reading changes nothing: the file is read through :mod:`radix_evict.inputs`
(a regular file, at most RESULT_BYTES), every row is checked against the row
schema, and only then is the file known to be a result file. A last line cut
short (a writer killed mid-line) is repaired, by dropping it, when the sweep
starts writing (:meth:`ResultFile.open`), never by a dry run or a refusal.
A sweep that writes holds an exclusive lock (``flock`` on ``NAME.lock``
beside the file) from before it reads until it closes, so a second sweep on
the same file is refused at once instead of overwriting the first's rows.

Columns: an untimed sweep's file has the columns it always had
(:data:`~radix_evict.sim.sweep.schema.ROW_FIELDS`); a timed sweep's has the
timed ones too (``TIMED_ROW_FIELDS``). A JSONL row carries its own kind's
keys; a CSV file keeps the columns of its header, so a timed sweep does not
append to an untimed sweep's CSV (it has no columns for the timed figures);
a Parquet file, rewritten whole, takes the timed columns once it holds a
timed row. Rows of cells with a host tier (HiCache) are the same: the host
columns in their JSONL rows, in a new CSV of a sweep with host cells (empty
in its one-tier rows), in Parquet once it holds one; a CSV without them
takes no host rows. A CSV written before the ``via`` column keeps its header: its
rows are read without it, and rows appended to it leave it out.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import IO, Any

from radix_evict.errors import RadixEvictError
from radix_evict.inputs import RESULT_BYTES, InputFileError, decode_utf8, read_bytes
from radix_evict.outputs import replacing
from radix_evict.sim.sweep.lock import FileLock, LockHeld
from radix_evict.sim.sweep.schema import (
    ADMISSION_FIGURES,
    COLUMN_SETS,
    FIELD_TYPES,
    FLEET_FIGURES,
    HOST_FIGURES,
    OK,
    ROW_FIELDS,
    TIMED_FIGURES,
    VIA,
    RowError,
    check_row,
    columns,
    is_admission,
    is_fleet,
    is_host,
    is_hybrid,
    is_timed,
    row_fields,
)

SUFFIXES = (".jsonl", ".csv", ".parquet")
ROW_START = '{"cell": '  # how every JSON row this module writes begins


def lock_name(path: Path) -> str:
    """The lock file's name: ``NAME.lock`` beside the result file."""
    return path.name + ".lock"


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


def _flat(row: dict[str, Any], columns: tuple[str, ...] = ROW_FIELDS) -> dict[str, Any]:
    """A row for CSV and Parquet, in ``columns``: dict fields as JSON text."""
    return {k: (None if row.get(k) is None else json.dumps(row[k], sort_keys=True))
            if FIELD_TYPES[k] == "json" else row.get(k) for k in columns}


def _typed(raw: dict[str, Any]) -> dict[str, Any]:
    """A row read from CSV (all text) or Parquet (JSON text fields) with its types back."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        kind = FIELD_TYPES.get(key)
        if kind is None or value is None or value == "" or not isinstance(value, str):
            out[key] = None if value == "" else value
            continue
        try:
            out[key] = (json.loads(value) if kind == "json" else int(value) if kind == "int"
                        else float(value) if kind == "float" else value)
        except ValueError:
            raise RowError(f"{key}: cannot read {value!r:.60}") from None
    return out


class ResultFile:
    """The rows already in ``path`` (if it exists), and, with ``write``, a writer that adds more.

    ``write`` takes the file's lock first (ResultFileError if another sweep
    holds it), so the rows read are the rows the file will keep. ``timed``:
    the sweep's rows are timed (a new CSV or Parquet file gets the timed
    columns; an untimed sweep's CSV is refused); ``host``: some have a host
    tier (the same, with the host columns); ``fleet``: some are fleet cells (the
    same, with the fleet columns); ``admission``: some host tiers have an admission
    policy (the same, with its columns); ``hybrid``: some replay a hybrid model (the same).
    """

    def __init__(self, path: Path, *, write: bool = False, timed: bool = False,
                 host: bool = False, fleet: bool = False, admission: bool = False,
                 hybrid: bool = False) -> None:
        self._fh: IO[str] | None = None
        self._csv: Any = None
        self._lock: FileLock | None = None
        self.path = path
        self.format = check_path(path)
        self.timed = timed
        self.host = host
        self.fleet = fleet
        self.admission = admission
        self.hybrid = hybrid
        self.columns: tuple[str, ...] | None = None  # a CSV file's header, once read
        self.rows: dict[str, dict[str, Any]] = {}
        self.torn = 0  # bytes of an unfinished last line, dropped when writing starts
        self._newline = False  # the last row lacks its newline: add one before appending
        if write:
            self._lock = FileLock(path.with_name(lock_name(path)))
            try:
                self._lock.acquire()
            except LockHeld as held:
                self._lock = None
                raise ResultFileError(
                    f"{path}: another sweep is writing this file ({held}); wait for it to "
                    "finish, or give this sweep another --out") from None
            except OSError as exc:  # the directory cannot be written: say so before any cell
                self._lock = None
                raise ResultFileError(
                    f"{path}: cannot write there (its lock file {lock_name(path)}: "
                    f"{exc.strerror or exc})") from None
        try:
            if os.path.lexists(path):
                for row in self._read():
                    self.rows[row["cell"]] = row
            if self.format == ".csv" and self.columns is not None:
                missing = (set(columns(timed, host, fleet, admission, hybrid))
                           - set(self.columns) - {VIA})
                if missing & set(TIMED_FIGURES):
                    raise ResultFileError(
                        f"{path}: an untimed sweep's file: its columns have no place for the "
                        "timed figures (ttft_p99_ms, ...); give this timed sweep another --out")
                if missing & set(FLEET_FIGURES):
                    raise ResultFileError(
                        f"{path}: a single-server sweep's file: its columns have no place for "
                        "the fleet's figures (gpu_hours, ...); give this sweep with --replicas "
                        "or --router another --out")
                if missing & set(ADMISSION_FIGURES) and not missing & set(HOST_FIGURES):
                    raise ResultFileError(
                        f"{path}: a file without admission's columns (admission_rejected_tokens, "
                        "pcie_bytes); give this sweep with --admission another --out")
                if missing:
                    raise ResultFileError(
                        f"{path}: a one-tier sweep's file: its columns have no place for the "
                        "host tier's figures (host_hit_rate, ...); give this sweep with a "
                        "host tier another --out")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ reading
    def _bytes(self) -> bytes:
        try:
            return read_bytes(self.path, limit=RESULT_BYTES, what="a sweep result file")
        except InputFileError as exc:
            raise ResultFileError(str(exc)) from None

    def _read(self) -> list[dict[str, Any]]:
        raw = self._bytes()
        if self.format == ".parquet":
            return self._read_parquet(raw)
        try:
            text = decode_utf8(self.path, raw, "a sweep result file")
        except InputFileError as exc:
            raise ResultFileError(str(exc)) from None
        cut = text.rfind("\n") + 1  # complete lines end here; what follows is unfinished
        body, tail = text[:cut], text[cut:]
        if self.format == ".csv":
            return self._read_csv(body, tail)
        return self._read_jsonl(body.splitlines(), tail)

    def _row(self, line: int, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ResultFileError(f"{self.path}:{line}: not a JSON object")
        try:
            return check_row(data)
        except RowError as exc:
            raise ResultFileError(f"{self.path}:{line}: {exc}") from None

    def _read_jsonl(self, lines: list[str], tail: str) -> list[dict[str, Any]]:
        rows = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                raise ResultFileError(f"{self.path}:{i}: not a JSON row") from None
            rows.append(self._row(i, data))
        if tail.strip():
            n = len(lines) + 1
            try:
                rows.append(self._row(n, json.loads(tail)))  # a whole row, its newline missing
                self._newline = True
            except ValueError:
                if not (tail.startswith(ROW_START) or ROW_START.startswith(tail)):
                    raise ResultFileError(
                        f"{self.path}:{n}: not a JSON row, and not the start of one a sweep "
                        "writes (is this a sweep result file?); left as it is") from None
                self.torn = len(tail.encode("utf-8"))
        return rows

    def _read_csv(self, body: str, tail: str) -> list[dict[str, Any]]:
        headers = [",".join(cols) for cols in COLUMN_SETS]
        if not body:
            if tail and not any(h.startswith(tail) for h in headers):
                raise ResultFileError(f"{self.path}: not a sweep result file (its first line is "
                                      "not the sweep's header); left as it is")
            self.torn = len(tail.encode("utf-8"))
            return []
        reader = csv.DictReader(io.StringIO(body))
        names = tuple(reader.fieldnames or ())
        if names and names not in COLUMN_SETS:
            raise ResultFileError(
                f"{self.path}: its columns are not this version's sweep columns "
                f"({', '.join(ROW_FIELDS)}, with a timed sweep's "
                f"{', '.join(k for k in columns(timed=True) if k not in ROW_FIELDS)} and a "
                f"host tier's {', '.join(k for k in columns(host=True) if k not in ROW_FIELDS)}"
                "); write to a new file")
        self.columns = names or None
        rows = []
        for record in reader:
            line = reader.line_num
            try:
                rows.append(self._row(line, _typed(dict(record))))
            except RowError as exc:
                raise ResultFileError(f"{self.path}:{line}: {exc}") from None
        self.torn = len(tail.encode("utf-8"))  # the header proved it a result file
        return rows

    def _read_parquet(self, raw: bytes) -> list[dict[str, Any]]:
        pa = _pyarrow(self.path)
        try:
            table = pa.parquet.read_table(pa.BufferReader(raw))
        except (pa.ArrowException, OSError) as exc:
            raise ResultFileError(f"{self.path}: not a Parquet file a sweep wrote ({exc})"
                                  ) from None
        rows = []
        for i, record in enumerate(table.to_pylist(), 1):
            try:
                rows.append(self._row(i, _typed(record)))
            except RowError as exc:
                raise ResultFileError(f"{self.path}: row {i}: {exc}") from None
        return rows

    def finished(self) -> set[str]:
        """Keys of the cells that ran (a failed cell is run again)."""
        return {k for k, r in self.rows.items() if r.get("status") == OK}

    # ------------------------------------------------------------------ writing
    def repair(self) -> int:
        """Drop an unfinished last line (a writer killed mid-line); returns the bytes dropped.

        Only a file opened with ``write`` (locked, and read as a result file).
        """
        if self._lock is None:
            raise ResultFileError(f"{self.path}: opened for reading only")
        dropped, self.torn = self.torn, 0
        if dropped:
            os.truncate(self.path, os.path.getsize(self.path) - dropped)
        return dropped

    def open(self) -> None:
        """Make the file ready to append (repaired first); needs ``write``."""
        self.repair()
        if self.format == ".parquet" or self._fh is not None:
            return
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115
        if self._newline:
            self._fh.write("\n")
            self._newline = False
        if self.format == ".csv":
            if new or self.columns is None:
                self.columns = columns(self.timed, self.host, self.fleet, self.admission,
                                       self.hybrid)
            self._csv = csv.DictWriter(self._fh, fieldnames=list(self.columns))
            if new:
                self._csv.writeheader()
                self._fh.flush()

    def add(self, row: dict[str, Any]) -> None:
        """Record one finished cell, on disk before this returns (checked against the schema)."""
        try:
            row = check_row(row)
        except RowError as exc:  # our bug, not the user's: never write what we cannot read
            raise ResultFileError(f"{self.path}: refusing to write a bad row: {exc}") from None
        self.open()
        self.rows[row["cell"]] = row
        if self.format == ".parquet":
            self._rewrite_parquet()
            return
        assert self._fh is not None
        if self._csv is not None:
            assert self.columns is not None
            if not set(row_fields(row)) - {VIA} <= set(self.columns):  # refused when opened
                raise ResultFileError(f"{self.path}: refusing to write a "
                                      f"{'timed' if is_timed(row) else 'host'} row into "
                                      "columns without its figures")
            self._csv.writerow(_flat(row, self.columns))
        else:
            self._fh.write(json.dumps(row, sort_keys=False, allow_nan=False) + "\n")
        self._fh.flush()

    def _rewrite_parquet(self) -> None:
        pa = _pyarrow(self.path)
        types = {"str": pa.string(), "json": pa.string(), "int": pa.int64(),
                 "float": pa.float64()}
        timed = self.timed or any(is_timed(r) for r in self.rows.values())
        host = self.host or any(is_host(r) for r in self.rows.values())
        fleet = self.fleet or any(is_fleet(r) for r in self.rows.values())
        admission = self.admission or any(is_admission(r) for r in self.rows.values())
        hybrid = self.hybrid or any(is_hybrid(r) for r in self.rows.values())
        names = columns(timed, host, fleet, admission, hybrid)
        schema = pa.schema([(k, types[FIELD_TYPES[k]]) for k in names])
        table = pa.Table.from_pylist([_flat(r, names) for r in self.rows.values()],
                                     schema=schema)
        with replacing(self.path) as tmp:  # never half written
            pa.parquet.write_table(table, tmp)

    def close(self) -> None:
        """Close the writer and release the lock (safe to call twice)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            self._csv = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> ResultFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
