"""The one schema of a sweep result row: what a sweep writes and what a resumed file must hold.

A row is a flat dict of JSON types; ``config`` and ``params`` are dicts
(written as JSON text in CSV and Parquet). An untimed sweep's row has the
columns :data:`ROW_FIELDS`, as it always had; a timed sweep's row
(:data:`TIMED_ROW_FIELDS`) adds the timing axes after ``seed`` and the timed
replay's figures after ``failed_admissions``. A row is timed when its
``cost_model`` is set (:func:`row_fields`). :class:`ResultRow` states each
field's type and range once; rows are checked against it before they are
written, and rows read back from a result file are checked against it before
a rerun trusts them, so a hand-edited ``"hit_rate": 7.5`` or
``"requests": {"x": 1}`` is refused naming the file and line.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OK = "ok"
ERROR = "error"


class ResultRow(BaseModel):
    """One cell's row (see the module docstring); field order is the column order."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore", frozen=True)

    cell: str
    policy: str | None = None
    config: dict[str, Any] | None = None
    config_source: str | None = None
    pool_tokens: int | None = Field(None, ge=1)
    page_size: int | None = Field(None, ge=1)
    workload: str | None = None
    params: dict[str, Any] | None = None
    seed: int | None = Field(None, ge=0)
    requests: int | None = Field(None, ge=0)
    hit_rate: float | None = Field(None, ge=0, le=1)
    p50_uncached: float | None = Field(None, ge=0)
    p90_uncached: float | None = Field(None, ge=0)
    p99_uncached: float | None = Field(None, ge=0)
    mean_uncached: float | None = Field(None, ge=0)
    evicted_tokens: int | None = Field(None, ge=0)
    failed_admissions: int | None = Field(None, ge=0)
    # the timed replay's axes and figures (virtual time), in timed rows only
    max_running: int | None = Field(None, ge=1)
    rate: float | None = Field(None, gt=0)
    cost_model: str | None = None
    ttft_p50_ms: float | None = Field(None, ge=0)
    ttft_p90_ms: float | None = Field(None, ge=0)
    ttft_p99_ms: float | None = Field(None, ge=0)
    queue_p99_ms: float | None = Field(None, ge=0)
    tpot_p50_ms: float | None = Field(None, ge=0)
    e2e_p99_ms: float | None = Field(None, ge=0)
    slo_attainment: float | None = Field(None, ge=0, le=1)
    throughput_rps: float | None = Field(None, ge=0)
    goodput_rps: float | None = Field(None, ge=0)
    retractions: int | None = Field(None, ge=0)
    peak_queue: int | None = Field(None, ge=0)
    replay_s: float | None = Field(None, ge=0)
    cache_s: float | None = Field(None, ge=0)
    status: Literal["ok", "error"]
    error: str | None = None


def _kind(annotation: Any) -> str:
    text = str(annotation)
    if "dict" in text:
        return "json"
    if "float" in text:
        return "float"
    if "int" in text:
        return "int"
    return "str"


# Field -> type ("str", "int", "float", or "json" for dicts).
FIELD_TYPES: dict[str, str] = {k: _kind(f.annotation) for k, f in ResultRow.model_fields.items()}
TIMED_AXES = ("max_running", "rate", "cost_model")  # a timed cell's point, after ``seed``
TIMED_FIGURES = (  # the timed replay's figures, after ``failed_admissions``
    "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "queue_p99_ms", "tpot_p50_ms", "e2e_p99_ms",
    "slo_attainment", "throughput_rps", "goodput_rps", "retractions", "peak_queue",
)
# An untimed row's columns, in order: exactly those of every sweep before the timed replay.
ROW_FIELDS = tuple(k for k in FIELD_TYPES if k not in TIMED_AXES + TIMED_FIGURES)
# A timed row's columns, in order.
TIMED_ROW_FIELDS = (
    *ROW_FIELDS[:ROW_FIELDS.index("seed") + 1], *TIMED_AXES,
    *ROW_FIELDS[ROW_FIELDS.index("seed") + 1:ROW_FIELDS.index("failed_admissions") + 1],
    *TIMED_FIGURES, *ROW_FIELDS[ROW_FIELDS.index("failed_admissions") + 1:],
)
COLUMN_SETS = (ROW_FIELDS, TIMED_ROW_FIELDS)  # the columns a result file may have
# Wall-clock timings: the only fields that differ between two runs of one cell (the timed
# replay's figures are in virtual time, and the same for every run).
TIMING_FIELDS = ("replay_s", "cache_s")


def is_timed(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a timed cell's (its ``cost_model`` is set)."""
    return row.get("cost_model") is not None


def row_fields(row: dict[str, Any]) -> tuple[str, ...]:
    """The columns of ``row``: :data:`TIMED_ROW_FIELDS` for a timed row, else :data:`ROW_FIELDS`."""
    return TIMED_ROW_FIELDS if is_timed(row) else ROW_FIELDS


class RowError(ValueError):
    """A row that does not fit :class:`ResultRow`; ``str()`` says which fields and why."""


def check_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every column of its kind (missing ones None), or RowError saying why.

    The columns are :func:`row_fields`'s, in order: an untimed row comes back
    with exactly the columns it always had.
    """
    missing = [k for k in ("cell", "status") if k not in row]
    if missing:
        raise RowError(f"not a sweep row (no {', '.join(missing)} field)")
    try:
        ResultRow.model_validate(row)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg'].lower()} (got {e['input']!r:.60})"
            for e in exc.errors())
        raise RowError(problems) from None
    return {k: row.get(k) for k in row_fields(row)}
