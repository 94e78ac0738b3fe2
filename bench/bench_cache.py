"""Cache-ops throughput per policy, and what one ``evict`` call costs as the cache grows.

    python bench/bench_cache.py                      # all eight built-in policies
    python bench/bench_cache.py --policies lru,tlru --leaves 1000,10000,100000

Part 1 replays the built-in ``chat`` workload through each policy and reports
requests per second of cache operations (match, lock, evict, alloc, insert,
free, unlock), as ``radix_evict.sim.replay`` measures them.

Part 2 keeps N evictable leaves in the tree (N = 1k, 10k, 100k), touches
random ones between calls so the candidate heap carries stale entries, and
times ``evict(1)``; each victim is replaced by a fresh leaf so N stays put.
Beside it, the same calls scored the way SGLang does it (every evictable leaf
scored and heapified on each call) show what the incremental driver avoids.
Figures are medians of repeated batches; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import time
from typing import Any

import numpy as np
import torch

from radix_evict import KVPool, RadixCache
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

ALL = ["lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"]
TLRU = {"threshold": 1024, "next_prompt_estimate": 128}


def config_for(policy: str) -> dict[str, int] | None:
    return TLRU if policy == "tlru" else None


def replay_throughput(policies: list[str], runs: int) -> list[dict[str, Any]]:
    workload = get_workload("chat")
    rows = []
    for policy in policies:
        results = [replay(workload, policy, config_for(policy)) for _ in range(runs)]
        r = results[0]
        rows.append(
            {
                "policy": policy,
                "requests": r.requests,
                "req_per_s": statistics.median(x.req_per_s for x in results),
                "hit_rate": r.hit_rate,
                "evicted_tokens": r.evicted_tokens,
            }
        )
    return rows


def build(policy: str, leaves: int) -> tuple[RadixCache, KVPool, np.random.Generator]:
    """A cache holding ``leaves`` two-token leaves under a shared 4-token prefix each."""
    pool = KVPool(size=leaves * 2 + 4096, device="cpu")
    cache = RadixCache(pool, policy=policy, policy_config=config_for(policy))
    rng = np.random.default_rng(0)
    for i in range(leaves):
        key = np.array([i, i + 1], dtype=np.int64)
        slots = pool.alloc(2)
        assert slots is not None
        cache.insert(key, slots, priority=int(rng.integers(0, 3)))
    return cache, pool, rng


def full_scan_evict(cache: RadixCache) -> float:
    """Time the per-call work of a driver that rescans: score all leaves, heapify, pop one."""
    t0 = time.perf_counter()
    score = cache.policy.score
    heap = [(score(x), x.last_access_time, i) for i, x in enumerate(cache.evictable_leaves())]
    heapq.heapify(heap)
    heapq.heappop(heap)
    return time.perf_counter() - t0


def evict_cost(policy: str, leaves: int, calls: int) -> dict[str, Any]:
    cache, pool, rng = build(policy, leaves)
    next_key = leaves + 10
    samples: list[float] = []
    for _ in range(calls):
        for k in rng.integers(0, next_key, size=4):
            cache.match_prefix(np.array([k, k + 1], dtype=np.int64))
        t0 = time.perf_counter()
        freed = cache.evict(1)
        samples.append(time.perf_counter() - t0)
        assert freed == 2
        slots = pool.alloc(2)
        assert slots is not None
        cache.insert(np.array([next_key, next_key + 1], dtype=np.int64), slots)
        next_key += 2
    scans = [full_scan_evict(cache) for _ in range(min(20, calls))]
    assert len(cache.evictable_leaves()) == leaves
    return {
        "policy": policy,
        "leaves": leaves,
        "evict_us": statistics.median(samples) * 1e6,
        "evict_p90_us": float(np.percentile(samples, 90)) * 1e6,
        "full_scan_us": statistics.median(scans) * 1e6,
    }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--policies", default=",".join(ALL))
    p.add_argument("--leaves", default="1000,10000,100000")
    p.add_argument("--calls", type=int, default=5000, help="evict calls per size (median)")
    p.add_argument("--runs", type=int, default=3, help="replays per policy (median req/s)")
    p.add_argument("--skip-replay", action="store_true")
    p.add_argument("--json-out", default=None)
    a = p.parse_args()
    torch.set_num_threads(1)
    policies = [s for s in a.policies.split(",") if s]
    sizes = [int(s) for s in a.leaves.split(",") if s]
    out: dict[str, Any] = {"torch": torch.__version__}

    if not a.skip_replay:
        rows = replay_throughput(policies, a.runs)
        out["replay"] = rows
        print(
            f"# built-in workload 'chat' ({rows[0]['requests']} requests), median of {a.runs} runs"
        )
        print(f"{'policy':10s} {'req/s':>10s} {'hit rate':>9s} {'evicted':>12s}")
        for r in rows:
            line = f"{r['policy']:10s} {r['req_per_s']:10,.0f} {r['hit_rate']:9.4f}"
            print(f"{line} {r['evicted_tokens']:12,}")
        print()

    costs = [evict_cost(pol, n, a.calls) for pol in policies for n in sizes]
    out["evict_cost"] = costs
    print(
        f"# one evict(1) call with N evictable leaves (median of {a.calls};"
        " full scan = SGLang-style rescan)"
    )
    print(f"{'policy':10s} {'leaves':>8s} {'evict us':>9s} {'p90 us':>8s} {'full scan us':>13s}")
    for c in costs:
        print(
            f"{c['policy']:10s} {c['leaves']:8,} {c['evict_us']:9.1f} {c['evict_p90_us']:8.1f} "
            f"{c['full_scan_us']:13.1f}"
        )
    flat = {}
    for pol in policies:
        mine = [c["evict_us"] for c in costs if c["policy"] == pol]
        flat[pol] = max(mine) / min(mine)
        print(f"# {pol}: largest/smallest evict cost across sizes = {flat[pol]:.2f}x")
    out["flatness"] = flat
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
