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
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from radix_evict.sim.timed.cost import CostModel, CostModelError, attention_pairs, from_mapping

__all__ = ["FitError", "Point", "calibrate", "fit", "read_points", "to_toml"]

COLUMNS = ("uncached", "cached", "batch", "ms")
KINDS = ("prefill", "decode")


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
    if integer and value != int(value):
        raise CostModelError(f"{path}:{line}: column {col!r}: {text!r} must be a whole number")
    return value


def read_points(path: str | Path) -> list[Point]:
    """The CSV's points; an error names the file, the line and the column."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CostModelError(f"{where}: cannot read: {exc}") from None
    rows = csv.DictReader(text.splitlines())
    missing = [c for c in COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise CostModelError(f"{where}: missing column(s) {', '.join(missing)} (header: "
                             f"{', '.join(COLUMNS)}[, kind])")
    points = []
    for line, row in enumerate(rows, start=2):
        u, c, b = (int(_number(where, line, k, row.get(k), True)) for k in COLUMNS[:3])
        ms = _number(where, line, "ms", row.get("ms"), False)
        kind = (row.get("kind") or "").strip() or ("prefill" if u > 0 else "decode")
        if kind not in KINDS:
            raise CostModelError(f"{where}:{line}: kind {kind!r}: use prefill or decode")
        if b < 1:
            raise CostModelError(f"{where}:{line}: column 'batch' must be >= 1")
        points.append(Point(kind, u, c, b, ms))
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


def calibrate(path: str | Path, name: str | None = None, source: str | None = None
              ) -> tuple[CostModel, list[FitError]]:
    """Read ``path`` and fit: the model (named after the file) and its errors."""
    points = read_points(path)
    stem = Path(path).stem
    return fit(points, name or stem, source or f"fitted by radix-evict calibrate {path}")


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
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
