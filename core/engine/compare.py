"""Policies compared through the tiny decoder: one engine replay per policy run, and the
no-cache baseline, each as a row with the engine's measured figures (``simulate --model``).

A run is anything with the simulator's ``PolicyRun`` shape (``policy``, ``name``
and ``on(workload)`` giving the config it uses there); the engine does not
import the simulator, so the shape is a protocol here. Each run's policy is
built here from its validated config (``registry.load_policy``) and the
engine's cache gets that object. Token figures come from the same replay, so
a policy's hit rate and its TTFT read side by side. :func:`compare` runs the
whole comparison of one workload (:func:`engine_requests` shrinks it to CPU
size) and returns an :class:`EngineComparison`: its rows, its warnings, its
table title and its JSON document.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from radix_evict.engine.loop import EngineRequest, run_engine_replay
from radix_evict.engine.model import MODEL_PRESETS, TinyConfig
from radix_evict.engine.result import EngineResult
from radix_evict.engine.workload import (
    default_pool_tokens,
    requests_from_workload,
    tiny_trace_requests,
)
from radix_evict.errors import OptionError
from radix_evict.policies.contract import PolicyConfig
from radix_evict.policies.registry import load_policy

__all__ = ["MODELS", "EngineComparison", "EngineRow", "Run", "compare", "compare_policies",
           "engine_requests"]

MODELS = tuple(MODEL_PRESETS)  # what ``--model`` may name
NO_CACHE = "no-cache"

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
        policy = load_policy(run.policy, resolved.config)  # built once: the cache gets it
        res = run_engine_replay(requests, policy, **common)
        rows.append(_row(run.name, run.policy, resolved.as_dict(), resolved.source, requests,
                         res))
        progress(i + 1, total)
    if baseline:
        res = run_engine_replay(requests, use_cache=False, **common)
        rows.append(_row(NO_CACHE, NO_CACHE, None, "none", requests, res))
    progress(total, total)
    return rows, pool


def engine_requests(workload: Any, *, trace: bool) -> list[EngineRequest]:
    """``workload``'s requests in the tiny model's vocabulary: a (tiny) built-in workload's
    as they are, a trace's first arrivals shrunk to CPU size with their prefix structure
    kept. None left is an OptionError."""
    vocab = TinyConfig().vocab_size
    requests = (tiny_trace_requests(workload, vocab_size=vocab) if trace
                else requests_from_workload(workload.requests(), vocab_size=vocab))
    if not requests:
        raise OptionError(f"{workload.name}: no request left to replay after shrinking")
    return requests


@dataclass(frozen=True)
class EngineComparison:
    """One workload's engine replays: a row per run (and the baseline), the pool they had."""

    model: str
    device: str  # as asked (resolved); each row's result names where it ran
    requests: int
    rows: list[EngineRow]
    pool_tokens: int
    page_size: int
    seed: int
    wall_s: float

    @property
    def cached(self) -> list[EngineRow]:
        """The policies' rows (what the recommendation chooses from): not the baseline."""
        return [r for r in self.rows if r.policy != NO_CACHE]

    @property
    def ran_on(self) -> str:
        return self.rows[0].result.device if self.rows else self.device

    def warnings(self, workload: str) -> list[str]:
        """A line per run that dropped requests it found no room for."""
        return [f"warning: {workload} / {r.label}: {r.result.dropped:,} of "
                f"{r.result.requests:,} requests found no room even after eviction "
                "(pool too small?); they were dropped, not served"
                for r in self.rows if r.result.dropped]

    def title(self, workload: str) -> str:
        return (f"{workload} through the {self.model} decoder on {self.ran_on}: "
                f"pool {self.pool_tokens:,} tokens")

    def table_rows(self) -> list[dict[str, Any]]:
        """Each row's figures as the table reads them (the result's, then the row's)."""
        return [{**r.result.to_dict(), **r.to_dict()} for r in self.rows]

    def to_json(self, workload_info: dict[str, Any],
                recommendation: dict[str, Any]) -> dict[str, Any]:
        return {"mode": "engine", "model": self.model, "device": self.ran_on,
                "workload": workload_info, "requests": self.requests,
                "pool_tokens": self.pool_tokens, "page_size": self.page_size,
                "seed": self.seed, "rows": [r.to_dict() for r in self.rows],
                "recommendation": recommendation, "wall_s": self.wall_s}


def compare(workload: Any, requests: Sequence[EngineRequest], runs: Sequence[Run], *,
            model: str, pool_tokens: int | None, page_size: int, device: str, seed: int,
            baseline: bool, progress: ProgressFn) -> EngineComparison:
    """:func:`compare_policies` through decoder ``model`` (one of :data:`MODELS`), timed."""
    t0 = time.perf_counter()
    rows, pool = compare_policies(workload, requests, runs, pool_tokens=pool_tokens,
                                  page_size=page_size, device=device, seed=seed,
                                  baseline=baseline, progress=progress,
                                  model_config=MODEL_PRESETS[model])
    return EngineComparison(model, device, len(requests), rows, pool, page_size, seed,
                            time.perf_counter() - t0)
