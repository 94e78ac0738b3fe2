"""What ``simulate --oracle`` costs: the oracle's replay and the ceiling against lru's.

    python bench/bench_oracle.py                         # the built-in chat workload
    python bench/bench_oracle.py --trace ../shared/traces/mooncake_conversation_trace.jsonl

Times are CPU seconds of this process (``time.process_time``), so they hold
when other processes share the cores. The oracle's time includes reading the
future (one pass over the workload's events, building its trie). Runs
alternate lru and oracle; figures are medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from radix_evict.sim.bound import replay_oracle
from radix_evict.sim.ceiling import infinite_pool_ceiling
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload, load_trace


def _cpu(fn: Any) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workload", default="chat")
    p.add_argument("--trace", default=None)
    p.add_argument("--page-size", type=int, default=None)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    if args.trace:
        wl: Any = load_trace(args.trace)
        page = args.page_size or 512
    else:
        wl = get_workload(args.workload)
        page = args.page_size or 1
    lru_s, oracle_s, ceil_s = [], [], []
    for _ in range(args.runs):
        t, lru = _cpu(lambda: replay(wl, "lru", page_size=page, timeline_points=0))
        lru_s.append(t)
        t, oracle = _cpu(lambda: replay_oracle(wl, page_size=page, timeline_points=0))
        oracle_s.append(t)
        t, ceiling = _cpu(lambda: infinite_pool_ceiling(wl, page))
        ceil_s.append(t)
    lru_t, oracle_t, ceil_t = (statistics.median(x) for x in (lru_s, oracle_s, ceil_s))
    print(f"{wl.name}: page {page}, {wl.num_requests:,} requests, median of {args.runs}")
    print(f"  lru replay      {lru_t:7.2f} s CPU   hit rate {lru.hit_rate:.4f}")
    print(f"  oracle replay   {oracle_t:7.2f} s CPU   hit rate {oracle.hit_rate:.4f}   "
          f"{oracle_t / lru_t:.2f}x lru")
    print(f"  ceiling         {ceil_t:7.2f} s CPU   hit rate {ceiling.hit_rate:.4f}   "
          f"{ceil_t / lru_t:.2f}x lru")


if __name__ == "__main__":
    main()
