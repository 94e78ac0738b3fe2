"""Policies compared through the tiny decoder: one engine replay per policy run, and the
no-cache baseline, each as a row with the engine's measured figures (``simulate --model``).

A run is anything with the simulator's ``PolicyRun`` shape (``policy``, ``name``
and ``on(workload)`` giving the config it uses there); the engine does not
import the simulator, so the shape is a protocol here. Token figures come
from the same replay, so a policy's hit rate and its TTFT read side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from radix_evict.engine.loop import EngineRequest, run_engine_replay
from radix_evict.engine.model import TinyConfig
from radix_evict.engine.result import EngineResult
from radix_evict.engine.workload import default_pool_tokens
from radix_evict.policies.contract import PolicyConfig

ProgressFn = Callable[[int, int], None]


class ResolvedConfig(Protocol):
    """The config one run uses on one workload (``sim.configs.RunConfig``)."""

    @property
    def config(self) -> PolicyConfig | None: ...

    @property
    def source(self) -> str: ...

    def as_dict(self) -> dict[str, Any] | None: ...


class Run(Protocol):
    """A policy run (``sim.configs.PolicyRun``): name, label and its config per workload."""

    @property
    def policy(self) -> str: ...

    @property
    def name(self) -> str: ...

    def on(self, workload: Any) -> ResolvedConfig: ...


@dataclass(frozen=True)
class EngineRow:
    """One engine replay as the report needs it (satisfies the recommendation's Scored)."""

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


def compare_policies(workload: Any, requests: Sequence[EngineRequest], runs: Sequence[Run],
                     *, pool_tokens: int | None, page_size: int, device: str | None, seed: int,
                     baseline: bool, progress: ProgressFn,
                     model_config: TinyConfig | None = None) -> tuple[list[EngineRow], int]:
    """One engine replay per run (its config resolved on ``workload``) and the no-cache
    baseline; returns the rows and the pool size used (whole pages)."""
    pool = pool_tokens or default_pool_tokens(requests)
    pool = max(page_size, pool // page_size * page_size)
    total = len(runs) + int(baseline)
    common: dict[str, Any] = {"pool_tokens": pool, "page_size": page_size, "device": device,
                              "seed": seed, "model_config": model_config}
    progress(0, total)
    rows = []
    for i, run in enumerate(runs):
        resolved = run.on(workload)
        res = run_engine_replay(requests, run.policy, resolved.config, **common)
        rows.append(_row(run.name, run.policy, resolved.as_dict(), resolved.source, requests,
                         res))
        progress(i + 1, total)
    if baseline:
        res = run_engine_replay(requests, use_cache=False, **common)
        rows.append(_row("no-cache", "no-cache", None, "none", requests, res))
    progress(total, total)
    return rows, pool
