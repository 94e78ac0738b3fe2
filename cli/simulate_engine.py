"""``simulate --model tiny``: the same question answered with real K/V and measured TTFT.

The workload is shrunk to CPU size (``radix_evict.sim.workloads.tiny.tiny_workload``;
a trace: ``tiny_trace_requests``) and replayed through the tiny decoder once per
policy, plus once without a cache as the baseline. Token figures come from the
same replay, so a policy's hit rate and its TTFT can be read side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from radix_evict.engine import EngineResult, requests_from_workload, run_engine_replay
from radix_evict.engine.loop import EngineRequest
from radix_evict.engine.model import TinyConfig
from radix_evict.engine.workload import default_pool_tokens, tiny_trace_requests
from radix_evict.sim.configs import RunConfig
from radix_evict.sim.runs import PolicyRun, run_replays
from radix_evict.sim.workloads import Workload
from radix_evict.sim.workloads.tiny import tiny_workload

from .output import ProgressFn

MODELS = ("tiny",)


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
               baseline: bool, progress: ProgressFn) -> tuple[list[EngineRow], int]:
    """Every run (the core's run_replays, one engine replay each) and the no-cache baseline."""
    pool = pool_tokens or default_pool_tokens(requests)
    pool = max(page_size, pool // page_size * page_size)
    total = len(runs) + int(baseline)
    common: dict[str, Any] = {"pool_tokens": pool, "page_size": page_size, "device": device,
                              "seed": seed}

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
