"""What ``learned`` costs per request, against ``lru``, in CPU time.

    python plugins_example/learned/bench_learned.py
    python plugins_example/learned/bench_learned.py \\
        --trace ../shared/traces/mooncake_conversation_trace.jsonl \\
        --limit 4000 --page-size 512 --pool-tokens 4000000 --runs 3

Each workload is replayed ``--runs`` times through ``lru`` and ``learned`` (a
fresh cache and policy each time). The replay times the cache operations of
every request (match, lock, evict, alloc, insert, free, unlock) in CPU time of
its thread, ``learned``'s callbacks, feature extraction, predictions and model
updates included, because they run inside those operations. Reported: the
median CPU microseconds per request for each policy, the difference (what the
learned policy adds per request), the leaf events it scored and the labels it
learned from per request, and the hit rates. Every score is computed in a
callback of the node it is about; ``evict`` only pops the driver's heap, so
the cost does not grow with the number of cached leaves.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from radix_evict import load_policy
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload
from radix_evict.sim.workloads.trace import load_trace


def measure(workload: Any, pool: int | None, page: int, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"workload": workload.name, "requests": workload.num_requests}
    for name in ("lru", "learned"):
        us, rates = [], []
        events = labels = 0
        for _ in range(runs):
            policy = load_policy(name)
            r = replay(workload, policy, pool_tokens=pool, page_size=page, timeline_points=0)
            us.append(r.cache_s / r.requests * 1e6)
            rates.append(r.hit_rate)
            events = getattr(policy, "events", 0)
            model = getattr(policy, "model", None)
            labels = model.labels if model is not None else 0
        out[name] = {
            "us_per_request": statistics.median(us),
            "hit_rate": rates[0],
            "events_per_request": events / workload.num_requests,
            "labels_per_request": labels / workload.num_requests,
        }
    out["added_us_per_request"] = out["learned"]["us_per_request"] - out["lru"]["us_per_request"]
    out["ratio"] = out["learned"]["us_per_request"] / out["lru"]["us_per_request"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", help="a Mooncake trace (default: the built-in chat workload)")
    ap.add_argument("--limit", type=int, default=0, help="first N requests of the trace")
    ap.add_argument("--page-size", type=int, default=None)
    ap.add_argument("--pool-tokens", type=int, default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args(argv)
    if args.trace:
        workload: Any = load_trace(args.trace, limit=args.limit)
        page = args.page_size or 512
    else:
        workload = get_workload("chat")
        page = args.page_size or 1
    row = measure(workload, args.pool_tokens, page, args.runs)
    if args.json:
        print(json.dumps(row, indent=1))
        return 0
    print(f"{row['workload']}: {row['requests']:,} requests, page {page}, "
          f"median of {args.runs} runs, CPU time in cache operations")
    print(f"{'policy':<8} {'us/request':>11} {'hit rate':>9} {'events/req':>11} {'labels/req':>11}")
    for name in ("lru", "learned"):
        x = row[name]
        print(f"{name:<8} {x['us_per_request']:>11.1f} {x['hit_rate']:>9.2%} "
              f"{x['events_per_request']:>11.2f} {x['labels_per_request']:>11.2f}")
    print(f"learned adds {row['added_us_per_request']:.1f} us per request "
          f"({row['ratio']:.2f}x lru)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
