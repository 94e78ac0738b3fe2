"""Hit rates of vLLM 0.33.0's CPU offload tier on Mooncake traces, its policies and radix-evict's.

    python bench/bench_vllm_offload.py                      # the table in docs/vllm.md
    python bench/bench_vllm_offload.py --limit 2000 --capacity 1024 --json

Each trace in ../shared/traces (Mooncake JSON lines: ``hash_ids`` are chained 512-token
blocks, one offload chunk each) is replayed through vLLM's own ``CPUOffloadingManager``,
built by vLLM's ``CPUOffloadingSpec.get_manager`` from a ``kv_connector_extra_config``
(:mod:`radix_evict.vllm.launch`), with vLLM's ``lru`` and ``arc`` and with radix-evict's
``lru``, ``gdsf`` and ``reuse`` (plugins_example) through ``cache_policy_module_path``.
The hit rate is the share of requested chunks loaded from the tier
(:mod:`radix_evict.vllm.replay`). vLLM comes from the installed package, or else from
``make vllm-env``'s unpacked wheel.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
sys.path.insert(0, str(ROOT / "tests"))  # the vLLM test environment

POLICIES = ["lru", "arc", "radix_evict_lru", "radix_evict_gdsf", "radix_evict_reuse"]


def load_vllm() -> str:
    """Import vLLM's offload manager (installed, or the test environment); say from where."""
    try:
        import vllm.v1.kv_offload.cpu.manager  # noqa: F401

        return "installed"
    except Exception:
        for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
            del sys.modules[name]  # a half-imported install must not shadow the test env
    from helpers import vllm_env

    if vllm_env.env_missing_reason() is not None:
        sys.exit(f"{vllm_env.env_missing_reason()}; run: {vllm_env.BUILD_COMMAND}")
    vllm_env.import_vllm()
    return f"unpacked wheel at {vllm_env.ENV_DIR}"


def extra_config(policy: str) -> dict[str, Any]:
    if policy.startswith("radix_evict_"):
        return {"eviction_policy": policy, "cache_policy_module_path": "radix_evict.vllm"}
    return {"eviction_policy": policy}


def run(trace: Path, capacities: list[int], limit: int | None,
        concurrency: int) -> list[dict[str, Any]]:
    from radix_evict.vllm.launch import build_manager
    from radix_evict.vllm.replay import mooncake_chains, replay

    chains = mooncake_chains(str(trace), limit)
    rows = []
    for capacity in capacities:
        for policy in POLICIES:
            t = time.perf_counter()
            manager = build_manager(extra_config(policy), num_chunks=capacity)
            out = replay(manager, chains, concurrency=concurrency)
            rows.append({
                "trace": trace.stem, "requests": out.requests, "capacity": capacity,
                "policy": policy, "hit_rate": round(out.hit_rate, 4),
                "evicted": out.evicted, "failed_stores": out.failed_stores,
                "seconds": round(time.perf_counter() - t, 2),
            })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one row per trace and capacity, one column per policy."""
    head = "| trace | requests | tier (chunks) | " + " | ".join(POLICIES) + " |"
    lines = [head, "|" + "---|" * (3 + len(POLICIES))]
    keys = sorted({(r["trace"], r["capacity"]) for r in rows})
    for trace, cap in keys:
        mine = {r["policy"]: r for r in rows if (r["trace"], r["capacity"]) == (trace, cap)}
        best = max(r["hit_rate"] for r in mine.values())
        cells = [f"**{mine[p]['hit_rate']:.1%}**" if mine[p]["hit_rate"] == best
                 else f"{mine[p]['hit_rate']:.1%}" for p in POLICIES]
        n = next(iter(mine.values()))["requests"]
        lines.append(f"| {trace} | {n} | {cap} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--capacity", type=int, action="append",
                   help="tier size in chunks (repeatable; default 4096 and 16384)")
    p.add_argument("--limit", type=int, default=None, help="first N requests of each trace")
    p.add_argument("--concurrency", type=int, default=1,
                   help="requests in flight (loads and stores pinned until they finish)")
    p.add_argument("--json", action="store_true", help="rows as JSON instead of the table")
    a = p.parse_args()
    traces = sorted(TRACES.glob("*.jsonl"))
    if not traces:
        sys.exit(f"no Mooncake traces under {TRACES}")
    where = load_vllm()
    rows = [r for t in traces for r in run(t, a.capacity or [4096, 16384], a.limit,
                                           a.concurrency)]
    if a.json:
        print(json.dumps({"vllm": where, "rows": rows}, indent=2))
    else:
        print(f"vLLM: {where}; concurrency {a.concurrency}\n")
        print(table(rows))


if __name__ == "__main__":
    main()
