"""``simulate --model tiny``: the same question answered with real K/V and measured TTFT.

The workload is shrunk to CPU size (``radix_evict.sim.workloads.tiny.tiny_workload``;
a trace: ``tiny_trace_requests``) and replayed through the tiny decoder once per
policy, plus once without a cache as the baseline. Token figures come from the
same replay, so a policy's hit rate and its TTFT can be read side by side.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from radix_evict.engine import EngineResult, requests_from_workload, run_engine_replay
from radix_evict.engine.loop import EngineRequest
from radix_evict.engine.model import MODEL_PRESETS, TinyConfig
from radix_evict.engine.workload import default_pool_tokens, tiny_trace_requests
from radix_evict.sim.configs import RunConfig, describe_workload
from radix_evict.sim.runs import PolicyRun, run_replays
from radix_evict.sim.workloads import Workload
from radix_evict.sim.workloads.tiny import tiny_workload

from . import output
from .errors import EXIT_USAGE, CliError
from .output import ProgressFn
from .simulate_derived import derived_notes
from .simulate_recommend import print_recommendation, recommend_served
from .simulate_report import engine_table

MODELS = tuple(MODEL_PRESETS)


@dataclass(frozen=True)
class EngineRow:
    """One engine replay as the report needs it (satisfies recommend.Scored)."""

    label: str
    policy: str
    config: dict[str, Any] | None
    config_source: str
    hit_rate: float
    p50_uncached: float
    p90_uncached: float
    p99_uncached: float
    result: EngineResult

    @property
    def completed(self) -> int:
        """Requests served (the core's winner rule skips a replay that served none)."""
        return self.result.completed

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "policy_config": self.config,
                "config_source": self.config_source, **self.result.to_dict(),
                "p50_uncached": self.p50_uncached, "p90_uncached": self.p90_uncached,
                "p99_uncached": self.p99_uncached, "policy": self.policy}


def _row(label: str, policy: str, config: dict[str, Any] | None, source: str,
         requests: Sequence[EngineRequest], res: EngineResult) -> EngineRow:
    """Uncached tokens per served request from the engine's own hit counts."""
    uncached = [len(q.prompt) - h for q, h in zip(requests, res.hits, strict=True)
                if h is not None]
    arr = np.asarray(uncached or [0], dtype=np.float64)
    p50, p90, p99 = (float(np.percentile(arr, q)) for q in (50, 90, 99))
    return EngineRow(label, policy, config, source, res.hit_rate, p50, p90, p99, res)


def tiny_setup(name: str, seed: int, params: dict[str, Any]) -> tuple[Workload,
                                                                      list[EngineRequest]]:
    """The CPU-sized workload and its requests in the tiny model's vocabulary."""
    workload = tiny_workload(name, seed=seed, **params)
    requests = requests_from_workload(workload.requests(), vocab_size=TinyConfig().vocab_size)
    return workload, requests


def tiny_trace_setup(trace: Workload) -> tuple[Workload, list[EngineRequest]]:
    """A trace's first arrivals, shrunk to CPU size with their prefix structure kept."""
    return trace, tiny_trace_requests(trace, vocab_size=TinyConfig().vocab_size)


def run_engine(workload: Workload, requests: Sequence[EngineRequest], runs: Sequence[PolicyRun],
               *, pool_tokens: int | None, page_size: int, device: str | None, seed: int,
               baseline: bool, progress: ProgressFn,
               model_config: TinyConfig | None = None) -> tuple[list[EngineRow], int]:
    """Every run (the core's run_replays, one engine replay each) and the no-cache baseline."""
    pool = pool_tokens or default_pool_tokens(requests)
    pool = max(page_size, pool // page_size * page_size)
    total = len(runs) + int(baseline)
    common: dict[str, Any] = {"pool_tokens": pool, "page_size": page_size, "device": device,
                              "seed": seed, "model_config": model_config}

    def engine_replay(_: Workload, run: PolicyRun, resolved: RunConfig,
                      report: ProgressFn | None) -> EngineRow:
        res = run_engine_replay(requests, run.policy, resolved.config, **common)
        if report is not None:
            report(1, 1)
        return _row(run.name, run.policy, resolved.as_dict(), resolved.source, requests, res)

    progress(0, total)
    done = run_replays([(workload, r) for r in runs], engine_replay, sizes=[1] * len(runs),
                       progress=lambda d, _t: progress(d, total))
    rows = [r for r in done if isinstance(r, EngineRow)]
    if baseline:
        res = run_engine_replay(requests, use_cache=False, **common)
        rows.append(_row("no-cache", "no-cache", None, "none", requests, res))
    progress(total, total)
    return rows, pool


def run_engine_mode(setup: tuple[Workload, list[Any]], runs: list[PolicyRun], *,
                pool_tokens: int | None, page_size: int, seed: int, device: str,
                baseline: bool, json_out: bool, progress: bool, model: str = "tiny") -> None:
    """--model tiny: real K/V through the tiny decoder, measured TTFT per policy.

    ``device`` is already resolved (``cli.preflight.device_option``).
    """
    wl, requests = setup
    if not requests:
        raise CliError(f"{wl.name}: no request left to replay after shrinking", EXIT_USAGE)
    dev = device
    output.note(f"model {model} on {device}: workload {wl.name} shrunk to "
                f"{len(requests)} requests")
    derived_notes([wl], runs)
    t0 = time.perf_counter()
    with output.progress_bar("engine replays", enabled=progress, delay_s=0.0) as prog:
        rows, pool = run_engine(wl, requests, runs, pool_tokens=pool_tokens,
                                page_size=page_size, device=dev, seed=seed, baseline=baseline,
                                progress=prog, model_config=MODEL_PRESETS[model])
    wall = time.perf_counter() - t0
    cached = [r for r in rows if r.policy != "no-cache"]
    for r in rows:
        if r.result.dropped:
            output.note(f"warning: {wl.name} / {r.label}: {r.result.dropped:,} of "
                        f"{r.result.requests:,} requests found no room even after eviction "
                        "(pool too small?); they were dropped, not served")
    rec = recommend_served(cached)
    if json_out:
        output.emit_json({
            "mode": "engine", "model": model, "device": rows[0].result.device if rows else dev,
            "workload": describe_workload(wl), "requests": len(requests), "pool_tokens": pool,
            "page_size": page_size, "seed": seed, "rows": [r.to_dict() for r in rows],
            "recommendation": rec.to_dict(), "wall_s": wall,
        })
    else:
        dicts = [{**r.result.to_dict(), **r.to_dict()} for r in rows]
        title = (f"{wl.name} through the {model} decoder on {rows[0].result.device}: "
                 f"pool {pool:,} tokens")
        output.stdout().print(engine_table(dicts, rec.policy, title))
        print_recommendation(rec)
    output.note(f"wall time {wall:.2f} s for {len(rows)} engine replays")

