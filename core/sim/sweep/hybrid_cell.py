"""A hybrid-model cell's replay and row: one policy through a model's hybrid cache.

The row has the token replay's columns (``hit_rate`` is the reusable hit
rate: every component of the prefix present), the timed figures when timed,
the model's point (``model_arch``, ``kv_memory``, the split ratio its kind
uses) and its own figures: ``full_hit_rate`` (what full-attention KV alone
covered) and the pools the budget bought (``full_pool_tokens``,
``swa_pool_tokens``, ``mamba_states``).
"""

from __future__ import annotations

import time
from typing import Any

from radix_evict.sim.curve import REPLAY
from radix_evict.sim.sweep.cell import Cell
from radix_evict.sim.sweep.schema import OK
from radix_evict.sim.workloads import Workload

__all__ = ["hybrid_figures", "hybrid_host_figures", "pool_figures", "run_hybrid_cell"]


def pool_figures(spec: Any) -> dict[str, Any]:
    """The pools a HybridSpec's budget bought (per server), as row columns."""
    return {"full_pool_tokens": spec.pools.full_tokens, "swa_pool_tokens": spec.pools.swa_tokens,
            "mamba_states": spec.pools.mamba_states}


def hybrid_figures(run: Any, spec: Any) -> dict[str, Any]:
    """A HybridRun's columns, and the pools of the spec it replayed with."""
    return {
        "requests": run.requests, "hit_rate": run.hit_rate, "full_hit_rate": run.full_hit_rate,
        "p50_uncached": run.p50_uncached, "p99_uncached": run.p99_uncached,
        "evicted_tokens": run.evicted_full, "failed_admissions": run.failed,
        **pool_figures(spec),
    }


def hybrid_host_figures(run: Any, spec: Any, host: Any) -> dict[str, Any]:
    """A hybrid host tier's columns: its full-KV host size, where the prompt tokens were found
    and the full-KV traffic (window and state copies are in ``--json``'s host counters);
    what the hybrid tier does not count in tokens is None."""
    from radix_evict.cache.hybrid.host import host_sizes
    from radix_evict.cache.hybrid.node import FULL

    p = spec.pools
    sizes = host_sizes(host, [p.full_tokens, p.swa_tokens, p.mamba_states], spec.page_size)
    h = run.host or {}
    return {
        "host_tokens": sizes[FULL], "device_hit_rate": run.hit_rate - run.host_hit_rate,
        "host_hit_rate": run.host_hit_rate, "miss_rate": 1 - run.hit_rate,
        "written_tokens": h.get("written", [0])[FULL],
        "loaded_tokens": h.get("loaded", [0])[FULL],
        "host_evicted_tokens": h.get("host_evicted", [0])[FULL],
    }


def run_hybrid_cell(cell: Cell, workload: Workload, base: dict[str, Any]) -> dict[str, Any]:
    """Replay a hybrid cell, token or timed (errors propagate: the caller makes them rows);
    ``base`` is its row with the coordinates filled in."""
    from radix_evict.sim.hybrid_replay import replay_hybrid
    from radix_evict.sim.hybrid_timed import replay_hybrid_timed
    from radix_evict.sim.sweep.rows import timed_figures

    assert cell.hybrid is not None
    t0 = time.perf_counter()
    spec = cell.hybrid.spec(cell.pool_tokens, workload.default_pool_tokens, cell.page_size)
    timing, host = cell.timing_spec(), cell.host_spec()
    row = dict(base)
    if timing is None:
        run = replay_hybrid(workload, spec, cell.policy, cell.config, host)
    else:
        run, figures = replay_hybrid_timed(workload, spec, cell.policy, cell.config, timing,
                                           host)
        row.update(timed_figures(figures))
    row.update(hybrid_figures(run, spec))
    if host is not None:
        row.update(hybrid_host_figures(run, spec, host))
    row.update({"pool_tokens": spec.pools.full_tokens, "via": REPLAY,
                "replay_s": time.perf_counter() - t0, "status": OK,
                "config_source": "given" if cell.config is not None else "none"})
    return row
