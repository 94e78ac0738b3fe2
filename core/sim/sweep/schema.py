"""The one schema of a sweep result row: what a sweep writes and what a resumed file must hold.

A row is a flat dict of JSON types; ``config`` and ``params`` are dicts
(written as JSON text in CSV and Parquet). An untimed sweep's row has the
columns :data:`ROW_FIELDS`, as it always had; a timed sweep's row
(:data:`TIMED_ROW_FIELDS`) adds the timing axes after ``seed`` and the timed
replay's figures after ``failed_admissions``. A row is timed when its
``cost_model`` is set (:func:`row_fields`). A cell with a host tier (HiCache)
adds its host point after the timing axes (:data:`HOST_AXES`) and the
host tier's figures after the timed ones (:data:`HOST_FIGURES`); a row is a
host row when its ``write_policy`` is set. A fleet cell (replicas behind a
router, timed) adds its fleet point after the host point (:data:`FLEET_AXES`)
and the fleet's figures last among the figures (:data:`FLEET_FIGURES`); a row
is a fleet row when its ``replicas`` is set. :class:`ResultRow` states each
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
    # the host tier's point, in host rows only (host_policy None: the device policy's)
    host_tokens: int | None = Field(None, ge=1)
    hicache_ratio: float | None = Field(None, gt=0)
    write_policy: str | None = None
    write_threshold: int | None = Field(None, ge=0)
    host_policy: str | None = None
    host_config: dict[str, Any] | None = None
    # the host tier's admission policy, and its figures: in rows that give one only
    admission: str | None = None
    admission_rejected_tokens: int | None = Field(None, ge=0)  # backups it refused
    pcie_bytes: int | None = Field(None, ge=0)  # written + loaded, at the cost model's KV size
    # the fleet's point, in fleet rows only (router_config None: the router's defaults)
    replicas: int | None = Field(None, ge=1)
    router: str | None = None
    router_config: dict[str, Any] | None = None
    # a hybrid model's point, in hybrid rows only (the ratio of its layout's kind, as used)
    model_arch: str | None = None
    kv_memory: str | None = None
    swa_full_tokens_ratio: float | None = Field(None, gt=0)
    mamba_full_memory_ratio: float | None = Field(None, gt=0)
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
    # the host tier's figures (HostFigures), in host rows only
    device_hit_rate: float | None = Field(None, ge=0, le=1)
    host_hit_rate: float | None = Field(None, ge=0, le=1)
    miss_rate: float | None = Field(None, ge=0, le=1)
    written_tokens: int | None = Field(None, ge=0)
    loaded_tokens: int | None = Field(None, ge=0)
    host_evicted_tokens: int | None = Field(None, ge=0)
    host_evictions: int | None = Field(None, ge=0)
    reclaimed_tokens: int | None = Field(None, ge=0)
    dropped_tokens: int | None = Field(None, ge=0)
    write_failed_tokens: int | None = Field(None, ge=0)
    load_back_failed_tokens: int | None = Field(None, ge=0)
    copy_wait_s: float | None = Field(None, ge=0)
    # the fleet's figures (FleetResult), in fleet rows only: GPU-hours of the workload and the
    # load balance (max over mean requests and prompt tokens per replica)
    gpu_hours: float | None = Field(None, ge=0)
    balance_requests: float | None = Field(None, ge=0)
    balance_tokens: float | None = Field(None, ge=0)
    # a hybrid model's figures: the full-KV hit rate (hit_rate is the reusable one), its pools
    full_hit_rate: float | None = Field(None, ge=0, le=1)
    full_pool_tokens: int | None = Field(None, ge=0)
    swa_pool_tokens: int | None = Field(None, ge=0)
    mamba_states: int | None = Field(None, ge=0)
    # how the figures were computed: "curve" (one lru pass for every pool size of its group,
    # radix_evict.sim.curve) or "replay" (the cell's own replay); None in older files' rows
    via: Literal["curve", "replay"] | None = None
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
HOST_AXES = ("host_tokens", "hicache_ratio", "write_policy", "write_threshold", "host_policy",
             "host_config")  # a host cell's point, after the timing axes
HOST_FIGURES = (  # the host tier's figures, after the timed ones
    "device_hit_rate", "host_hit_rate", "miss_rate", "written_tokens", "loaded_tokens",
    "host_evicted_tokens", "host_evictions", "reclaimed_tokens", "dropped_tokens",
    "write_failed_tokens", "load_back_failed_tokens", "copy_wait_s",
)
ADMISSION_AXES = ("admission",)  # after the host point, in rows that give one
ADMISSION_FIGURES = ("admission_rejected_tokens", "pcie_bytes")  # after the host figures
FLEET_AXES = ("replicas", "router", "router_config")  # a fleet cell's point, after the host's
FLEET_FIGURES = ("gpu_hours", "balance_requests", "balance_tokens")  # after the host figures
HYBRID_AXES = ("model_arch", "kv_memory", "swa_full_tokens_ratio", "mamba_full_memory_ratio")
HYBRID_FIGURES = ("full_hit_rate", "full_pool_tokens", "swa_pool_tokens", "mamba_states")


# An untimed row's columns, in order: exactly those of every sweep before the timed replay.
ROW_FIELDS = tuple(k for k in FIELD_TYPES
                   if k not in TIMED_AXES + TIMED_FIGURES + HOST_AXES + HOST_FIGURES
                   + ADMISSION_AXES + ADMISSION_FIGURES + FLEET_AXES + FLEET_FIGURES
                   + HYBRID_AXES + HYBRID_FIGURES)


def columns(timed: bool = False, host: bool = False, fleet: bool = False,
            admission: bool = False, hybrid: bool = False) -> tuple[str, ...]:
    """The columns of a row of that kind, in order: :data:`ROW_FIELDS`, with the timing axes
    after ``seed``, the host point (its admission) and the fleet point after them, the timed
    figures after ``failed_admissions``, the host figures (admission's) and the fleet figures
    after them, a hybrid model's last. Admission and hybrid columns only in a row that gives
    one: other kinds keep theirs."""
    adm = host and admission
    axes = ((TIMED_AXES if timed else ()) + (HOST_AXES if host else ())
            + (ADMISSION_AXES if adm else ()) + (FLEET_AXES if fleet else ())
            + (HYBRID_AXES if hybrid else ()))
    figures = ((TIMED_FIGURES if timed else ()) + (HOST_FIGURES if host else ())
               + (ADMISSION_FIGURES if adm else ()) + (FLEET_FIGURES if fleet else ())
               + (HYBRID_FIGURES if hybrid else ()))
    seed = ROW_FIELDS.index("seed") + 1
    failed = ROW_FIELDS.index("failed_admissions") + 1
    return (*ROW_FIELDS[:seed], *axes, *ROW_FIELDS[seed:failed], *figures,
            *ROW_FIELDS[failed:])


TIMED_ROW_FIELDS = columns(timed=True)  # a timed row's columns, in order
HOST_ROW_FIELDS = columns(host=True)  # an untimed host row's
TIMED_HOST_ROW_FIELDS = columns(timed=True, host=True)  # a timed host row's
# ``via`` came with the pool-size curve (issue #41): a CSV written before it has the same
# columns without it, and is read and appended to as it is (its rows say no ``via``).
VIA = "via"
LEGACY_COLUMN_SETS = tuple(tuple(k for k in cols if k != VIA)
                           for cols in (ROW_FIELDS, TIMED_ROW_FIELDS, HOST_ROW_FIELDS,
                                        TIMED_HOST_ROW_FIELDS))
# A fleet replays timed: its rows' columns, with a host tier or without.
FLEET_ROW_FIELDS = columns(timed=True, fleet=True)
FLEET_HOST_ROW_FIELDS = columns(timed=True, host=True, fleet=True)
# A host tier with an admission policy: its rows' columns, untimed, timed, in a fleet.
ADMISSION_COLUMN_SETS = tuple(columns(timed, True, fleet, True)
                              for timed, fleet in ((False, False), (True, False), (True, True)))
# A hybrid model's rows: token or timed, one server or a fleet (timed), a host tier or not.
HYBRID_COLUMN_SETS = tuple(columns(timed, host, fleet, False, True)
                           for timed in (False, True) for host in (False, True)
                           for fleet in ((False, True) if timed else (False,)))
# The columns a result file may have.
COLUMN_SETS = (ROW_FIELDS, TIMED_ROW_FIELDS, HOST_ROW_FIELDS, TIMED_HOST_ROW_FIELDS,
               FLEET_ROW_FIELDS, FLEET_HOST_ROW_FIELDS, *LEGACY_COLUMN_SETS,
               *ADMISSION_COLUMN_SETS, *HYBRID_COLUMN_SETS)
# Wall-clock timings: the only fields that differ between two runs of one cell (the timed
# replay's figures are in virtual time, and the same for every run).
TIMING_FIELDS = ("replay_s", "cache_s")


def is_timed(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a timed cell's (its ``cost_model`` is set)."""
    return row.get("cost_model") is not None


def is_host(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a cell's with a host tier (its ``write_policy`` is set)."""
    return row.get("write_policy") is not None


def is_hybrid(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a hybrid model's cell (its ``model_arch`` is set)."""
    return row.get("model_arch") is not None


def is_admission(row: dict[str, Any]) -> bool:
    """Whether ``row``'s host tier has an admission policy (its ``admission`` is set)."""
    return row.get("admission") is not None


def is_fleet(row: dict[str, Any]) -> bool:
    """Whether ``row`` is a fleet cell's (its ``replicas`` is set)."""
    return row.get("replicas") is not None


def row_fields(row: dict[str, Any]) -> tuple[str, ...]:
    """The columns of ``row``'s kind (:func:`columns`): timed or not, host tier or not, fleet
    or not."""
    return columns(is_timed(row), is_host(row), is_fleet(row), is_admission(row),
                   is_hybrid(row))


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
