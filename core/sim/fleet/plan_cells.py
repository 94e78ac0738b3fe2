"""Plan probes as sweep cells: each probe is the fleet cell a timed sweep with ``--replicas N
--router R`` runs, and its row goes to a sweep result file, so a rerun of the plan resumes.

A plan over a whole trace replays it once per probe, minutes each; a plan
stopped (Ctrl-C, a machine taken back) should not start over. With a result
file (``plan --out``), :class:`CellProbe` names each probe by its sweep cell
(:class:`~radix_evict.sim.sweep.cell.Cell` with its fleet point: the same key,
so the same file format, checks and resume as ``sweep --out``), takes a probe
the file already has from its row, and replays the others with the sweep's
own :func:`~radix_evict.sim.sweep.rows.run_cell`. The rows hold the TTFT
percentiles a sweep writes (p50, p90, p99), so a plan with a result file
holds one of those. The rows are written by the process that runs the plan
(:meth:`CellProbe.keep`), as each round of probes finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.sim.fleet.plan import PlanProbeError, PlanSetting, Probe
from radix_evict.sim.sweep.cell import Cell, Source
from radix_evict.sim.sweep.fingerprints import cell_inputs, input_files
from radix_evict.sim.sweep.fleet_axes import FleetPoint
from radix_evict.sim.sweep.hybrid_axes import HybridPoint
from radix_evict.sim.sweep.rows import run_cell
from radix_evict.sim.sweep.run import Executor
from radix_evict.sim.sweep.store import ResultFile
from radix_evict.sim.sweep.timing_axes import TimingPoint
from radix_evict.sim.workloads import Workload

__all__ = ["ROW_PERCENTILES", "CellProbe", "probe_of_row"]

ROW_PERCENTILES = {50: "ttft_p50_ms", 90: "ttft_p90_ms", 99: "ttft_p99_ms"}


def probe_of_row(row: dict[str, Any], percentile: int) -> Probe:
    """A fleet cell's row as the plan reads it (the row keeps it: written once, by the plan)."""
    if row.get("status") != "ok":
        raise PlanProbeError(f"{row.get('policy')} at {row.get('replicas')} replicas: "
                             f"{row.get('error')}")
    return Probe(replicas=int(row["replicas"]), ttft_ms=float(row[ROW_PERCENTILES[percentile]]),
                 ttft_p99_ms=float(row["ttft_p99_ms"]), hit_rate=float(row["hit_rate"]),
                 gpu_hours=float(row["gpu_hours"]), requests=int(row["requests"]),
                 refused=int(row.get("failed_admissions") or 0), row=row)


@dataclass
class CellProbe:
    """Probes as sweep fleet cells of one workload, kept in (and resumed from) ``results``."""

    workload: Workload
    source: Source
    seed: int | None  # None for a trace (the same for every seed), as sweep cells have it
    pool_tokens: int | None  # None: the workload's own, as a sweep cell names it
    page_size: int
    point: TimingPoint
    percentile: int
    results: ResultFile | None  # None: nothing kept (plan --ray without --out)
    executor: Executor
    trace: str | None = None  # its path, when the source is a trace (its digest is in keys)
    hybrid: HybridPoint | None = None  # each replica on this hybrid model's cache

    def cell(self, setting: PlanSetting, replicas: int) -> Cell:
        """The sweep cell of ``setting`` at ``replicas`` (its key is the probe's name)."""
        inputs = cell_inputs(input_files(self.trace, setting.run.config))
        return Cell(setting.run.policy, setting.run.config, self.pool_tokens, self.page_size,
                    self.source, self.seed, self.point, setting.host, inputs,
                    FleetPoint(replicas, setting.router, setting.router_config_json),
                    self.hybrid)

    def _kept(self, cell: Cell) -> dict[str, Any] | None:
        row = None if self.results is None else self.results.rows.get(cell.key)
        return row if row is not None and row.get("status") == "ok" else None

    def __call__(self, setting: PlanSetting, replicas: int) -> Probe:
        cell = self.cell(setting, replicas)
        row = self._kept(cell) or run_cell(cell, self.workload)
        return probe_of_row(row, self.percentile)

    def run_round(self, asks: Sequence[tuple[PlanSetting, int]]) -> list[Probe]:
        """A round's probes, in order: the file's rows, the rest run by the sweep's executor
        (local processes or Ray tasks) as sweep cells."""
        cells = [self.cell(s, n) for s, n in asks]
        rows = {c.key: row for c in cells if (row := self._kept(c)) is not None}
        todo = list({c.key: c for c in cells if c.key not in rows}.values())
        if todo:
            got = self.executor(todo, {todo[0].workload_key: self.workload}, None)
            try:
                rows.update((row["cell"], row) for row in got)
            finally:
                close = getattr(got, "close", None)
                if close is not None:
                    close()  # stops the executor's workers at once, even on Ctrl-C
        return [probe_of_row(rows[c.key], self.percentile) for c in cells]

    def keep(self, probe: Probe) -> None:
        """Write a new probe's row (one read back from the file is there already)."""
        row = probe.row
        if (self.results is not None and row is not None
                and self.results.rows.get(row["cell"]) != row):
            self.results.add(row)
