"""Fit a cost model to measured step times: ``radix-evict calibrate POINTS.csv``.

A CSV row is one measured step: ``uncached,cached,batch,ms`` (a ``kind``
column, ``prefill`` or ``decode``, is optional):

- a prefill batch: ``uncached`` new tokens in all, after ``cached`` tokens
  in all, over ``batch`` requests;
- a decode step (``uncached`` 0 when there is no ``kind``): ``batch``
  requests reading ``cached`` context tokens in all.

Each part is a non-negative least-squares fit of the cost model's terms
(every subset of the terms is solved and the best one with no negative
coefficient kept: exact for so few unknowns). The error is reported per part,
in percent of the measured times, so a user sees how far to trust the model.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from radix_evict.inputs import CSV_BYTES, InputFileError, read_text
from radix_evict.sim.timed.cost import CostModel, CostModelError, attention_pairs, from_mapping

__all__ = ["FITTED_BY", "FitError", "Point", "calibrate", "fit", "read_points", "to_toml"]

COLUMNS = ("uncached", "cached", "batch", "ms")
KINDS = ("prefill", "decode")
# What one measured step can hold: no step is a trillion tokens or a day long, and these keep
# the fit's sums (attention pairs, squared times) far inside float's range.
MAX_TOKENS = 1e12
MAX_STEP_MS = 86_400_000.0  # one day
MAX_FIELD = 100  # characters of one number
MAX_LINE = 1_000  # characters of one row: a few numbers and a kind


@dataclass(frozen=True)
class Point:
    """One measured step."""

    kind: str
    uncached: int
    cached: int
    batch: int
    ms: float


@dataclass(frozen=True)
class FitError:
    """How well one part of the model fits its points (percent of the measured times)."""

    kind: str
    points: int
    mean_abs_pct: float
    max_abs_pct: float
    r2: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "points": self.points, "mean_abs_pct": self.mean_abs_pct,
                "max_abs_pct": self.max_abs_pct, "r2": self.r2}


def _number(path: str, line: int, col: str, text: str | None, integer: bool) -> float:
    if text is None or not text.strip():
        raise CostModelError(f"{path}:{line}: column {col!r} is empty")
    try:
        value = float(text)
    except ValueError:
        raise CostModelError(f"{path}:{line}: column {col!r}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise CostModelError(f"{path}:{line}: column {col!r}: {text!r} must be >= 0")
    limit, unit = (MAX_TOKENS, "in one step") if integer else (MAX_STEP_MS, "ms for one step")
    if value > limit:
        raise CostModelError(f"{path}:{line}: column {col!r}: {text!r} is over the limit of "
                             f"{limit:g} {unit}")
    if integer and value != int(value):
        raise CostModelError(f"{path}:{line}: column {col!r}: {text!r} must be a whole number")
    return value


def _header(where: str, header: list[str]) -> dict[str, int]:
    """Each column's index; a missing column or one named twice is an error naming it."""
    twice = sorted({c for c in header if c and header.count(c) > 1})
    if twice:
        raise CostModelError(f"{where}:1: column(s) {', '.join(twice)} given twice; which one "
                             "holds the measurements is not clear: keep one")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise CostModelError(f"{where}: missing column(s) {', '.join(missing)} (header: "
                             f"{', '.join(COLUMNS)}[, kind])")
    return {c: i for i, c in enumerate(header)}


def _long_line(where: str, line: int, text: str, header: list[str]) -> CostModelError:
    """A line no measured step makes: name the first field that is too long."""
    fields = text.split(",")
    i = next((i for i, f in enumerate(fields) if len(f) > MAX_FIELD), len(fields) - 1)
    col = repr(header[i]) if i < len(header) else f"{i + 1}"
    return CostModelError(f"{where}:{line}: column {col}: a field of {len(fields[i]):,} "
                          f"characters (a line of {len(text):,}); a measured step is a few "
                          f"numbers, at most {MAX_FIELD:,} characters each")


def read_points(path: str | Path) -> list[Point]:
    """The CSV's points; an error names the file, the line and the column.

    Read through the bounded reader (a regular file, at most CSV_BYTES, a BOM dropped).
    Line numbers are the file's own (blank lines count); a line longer than any measured
    step's is refused before the csv module sees it.
    """
    where = str(path)
    try:
        text = read_text(path, limit=CSV_BYTES, what="a CSV of measured steps")
    except InputFileError as exc:
        raise CostModelError(str(exc)) from None
    lines = text.splitlines()
    header_row = lines[0].split(",") if lines else []  # to name a long line's column
    for n, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE:
            raise _long_line(where, n, raw, header_row)
    rows = csv.reader(io.StringIO(text, newline=""))
    points = []
    try:
        index = _header(where, next(rows, []))
        for row in rows:
            line = rows.line_num
            if not any(field.strip() for field in row):
                continue
            cell = {c: (row[i] if i < len(row) else None) for c, i in index.items()}
            u, c, b = (int(_number(where, line, k, cell[k], True)) for k in COLUMNS[:3])
            ms = _number(where, line, "ms", cell["ms"], False)
            kind = (cell.get("kind") or "").strip() or ("prefill" if u > 0 else "decode")
            if kind not in KINDS:
                raise CostModelError(f"{where}:{line}: column 'kind': {kind!r}: use prefill or "
                                     "decode")
            if b < 1:
                raise CostModelError(f"{where}:{line}: column 'batch' must be >= 1")
            points.append(Point(kind, u, c, b, ms))
    except csv.Error as exc:
        raise CostModelError(f"{where}:{rows.line_num}: not CSV: {exc}") from None
    if not points:
        raise CostModelError(f"{where}: no points")
    return points


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (every subset of columns; few columns)."""
    best, best_err = np.zeros(x.shape[1]), float(np.sum(y * y))
    for k in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), k):
            sol, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
            if np.any(sol < 0):
                continue
            err = float(np.sum((x[:, cols] @ sol - y) ** 2))
            if err < best_err - 1e-15:
                best = np.zeros(x.shape[1])
                best[list(cols)] = sol
                best_err = err
    return best


def _design(points: Sequence[Point], kind: str) -> tuple[np.ndarray, np.ndarray]:
    rows: list[tuple[float, ...]] = []  # prefill: 4 terms, decode: 3
    for p in points:
        if kind == "prefill":  # the batch's pairs, its requests taken as equal
            per = attention_pairs(p.cached // p.batch, p.uncached // p.batch)
            rows.append((1.0, p.uncached, per * p.batch / 1e6, p.cached / 1e3))
        else:
            rows.append((1.0, p.batch, p.cached / 1e3))
    return np.asarray(rows, dtype=np.float64), np.asarray([p.ms for p in points])


def _error(kind: str, x: np.ndarray, y: np.ndarray, coef: np.ndarray) -> FitError:
    pred = x @ coef
    pct = np.abs(pred - y) / np.maximum(y, 1e-9) * 100
    ss_res = float(np.sum((pred - y) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return FitError(kind, len(y), float(pct.mean()), float(pct.max()), r2)


def fit(points: Sequence[Point], name: str = "calibrated", source: str = ""
        ) -> tuple[CostModel, list[FitError]]:
    """The cost model that fits ``points`` best, and its error per part.

    Both parts need points: a model that knows only prefill cannot time decode.
    """
    coefs: dict[str, np.ndarray] = {}
    errors = []
    for kind in KINDS:
        part = [p for p in points if p.kind == kind]
        if len(part) < 3:
            raise CostModelError(f"{len(part)} {kind} point(s): a fit needs at least 3 "
                                 f"(measure {kind} steps of several sizes)")
        x, y = _design(part, kind)
        coefs[kind] = _nnls(x, y)
        errors.append(_error(kind, x, y, coefs[kind]))
    pf, dc = coefs["prefill"], coefs["decode"]
    model = from_mapping({
        "name": name, "source": source,
        "prefill": {"base_ms": pf[0], "per_token_ms": pf[1], "per_mpair_ms": pf[2],
                    "per_cached_ktoken_ms": pf[3]},
        "decode": {"base_ms": dc[0], "per_request_ms": dc[1], "per_ktoken_ms": dc[2]},
    }, "fit")
    return model, errors


# The default ``source`` of a fitted model begins so: how calibrate --out knows its own files.
FITTED_BY = "fitted by radix-evict calibrate"


def calibrate(path: str | Path, name: str | None = None, source: str | None = None
              ) -> tuple[CostModel, list[FitError]]:
    """Read ``path`` and fit: the model (named after the file) and its errors."""
    points = read_points(path)
    stem = Path(path).stem
    return fit(points, name or stem, source or f"{FITTED_BY} {path}")


def to_toml(model: CostModel, errors: Sequence[FitError] = ()) -> str:
    """The model as a cost-model file (``--cost-model FILE``), its fit error as comments."""
    lines = [f"name = {_q(model.name)}", f"source = {_q(model.source)}"]
    for e in errors:
        lines.append(f"# fit {e.kind}: {e.points} points, mean error {e.mean_abs_pct:.1f}%, "
                     f"max {e.max_abs_pct:.1f}%, R^2 {e.r2:.4f}")
    for part in ("prefill", "decode"):
        lines.append("")
        lines.append(f"[{part}]")
        for key, value in getattr(model, part).model_dump().items():
            lines.append(f"{key} = {value:.6g}")
    return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    """A TOML basic string: backslash, quote and every control character escaped, so a
    ``--name`` or a file name holding one reads back (``--cost-model``) as it was."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
