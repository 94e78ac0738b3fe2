"""``simulate --model tiny``: the same question answered with real K/V and measured TTFT.

The workload is shrunk to CPU size (``radix_evict.sim.workloads.tiny.tiny_workload``;
a trace: ``tiny_trace_requests``); the replays through the tiny decoder, one per
policy and the no-cache baseline, are the engine's
(:func:`radix_evict.engine.compare.compare_policies`); this module notes,
recommends and renders.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from radix_evict.engine import requests_from_workload
from radix_evict.engine.compare import compare_policies
from radix_evict.engine.loop import EngineRequest
from radix_evict.engine.model import MODEL_PRESETS, TinyConfig
from radix_evict.engine.workload import tiny_trace_requests
from radix_evict.sim.configs import describe_workload
from radix_evict.sim.runs import PolicyRun
from radix_evict.sim.workloads import Workload
from radix_evict.sim.workloads.tiny import tiny_workload

from . import output
from .errors import EXIT_USAGE, CliError
from .simulate_derived import derived_notes
from .simulate_recommend import print_recommendation, recommend_served
from .simulate_report import engine_table

if TYPE_CHECKING:
    from .simulate_options import SimulateOptions

MODELS = tuple(MODEL_PRESETS)


def tiny_setup(name: str, seed: int, params: dict[str, Any]) -> tuple[Workload,
                                                                      list[EngineRequest]]:
    """The CPU-sized workload and its requests in the tiny model's vocabulary."""
    workload = tiny_workload(name, seed=seed, **params)
    requests = requests_from_workload(workload.requests(), vocab_size=TinyConfig().vocab_size)
    return workload, requests


def tiny_trace_setup(trace: Workload) -> tuple[Workload, list[EngineRequest]]:
    """A trace's first arrivals, shrunk to CPU size with their prefix structure kept."""
    return trace, tiny_trace_requests(trace, vocab_size=TinyConfig().vocab_size)


def run_engine_mode(setup: tuple[Workload, list[Any]], runs: list[PolicyRun],
                    o: SimulateOptions, device: str) -> None:
    """--model tiny: real K/V through the tiny decoder, measured TTFT per policy.

    ``device`` is already resolved (``cli.preflight.device_option``).
    """
    model = o.model or "tiny"
    page_size, seed = o.page_size, o.seed
    wl, requests = setup
    if not requests:
        raise CliError(f"{wl.name}: no request left to replay after shrinking", EXIT_USAGE)
    output.note(f"model {model} on {device}: workload {wl.name} shrunk to "
                f"{len(requests)} requests")
    derived_notes([wl], runs)
    t0 = time.perf_counter()
    with output.progress_bar("engine replays", enabled=o.progress, delay_s=0.0) as prog:
        rows, pool = compare_policies(wl, requests, runs, pool_tokens=o.pool_tokens,
                                      page_size=page_size, device=device, seed=seed,
                                      baseline=o.baseline, progress=prog,
                                      model_config=MODEL_PRESETS[model])
    wall = time.perf_counter() - t0
    cached = [r for r in rows if r.policy != "no-cache"]
    for r in rows:
        if r.result.dropped:
            output.note(f"warning: {wl.name} / {r.label}: {r.result.dropped:,} of "
                        f"{r.result.requests:,} requests found no room even after eviction "
                        "(pool too small?); they were dropped, not served")
    rec = recommend_served(cached)
    if o.json_out:
        output.emit_json({
            "mode": "engine", "model": model, "device": rows[0].result.device if rows else device,
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

