"""The one schema of a sweep result row: what a sweep writes and what a resumed file must hold.

A row is a flat dict of JSON types; ``config`` and ``params`` are dicts
(written as JSON text in CSV and Parquet). :class:`ResultRow` states each
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


# Field -> type ("str", "int", "float", or "json" for dicts), in column order.
FIELD_TYPES: dict[str, str] = {k: _kind(f.annotation) for k, f in ResultRow.model_fields.items()}
ROW_FIELDS = tuple(FIELD_TYPES)
TIMING_FIELDS = ("replay_s", "cache_s")


class RowError(ValueError):
    """A row that does not fit :class:`ResultRow`; ``str()`` says which fields and why."""


def check_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every field of the schema (missing ones None), or RowError saying why."""
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
    return {k: row.get(k) for k in ROW_FIELDS}
