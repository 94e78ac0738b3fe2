"""The lru pool-size curve in one pass against one replay per size: time and equality.

    python bench/bench_pool_curve.py                 # Mooncake conversation, page 512, 1M..16M+1M
    python bench/bench_pool_curve.py --sizes 1M..16M*2 --limit 3000
    python bench/bench_pool_curve.py --workload chat --page-size 1 --sizes 50K..800K*2

Times are CPU seconds of this process (``time.process_time``), so they hold
when other processes share the cores. "one replay" is the replay at the
middle size (the goal: the curve in at most 1.5x of it). Every size is then
replayed on its own and compared: hit tokens, evicted tokens, evict calls,
the uncached percentiles (exact equality) and the hit rate to four decimals.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from radix_evict.sim.curve import REPLAY, pool_curve
from radix_evict.sim.replay import replay
from radix_evict.sim.sweep.values import parse_counts
from radix_evict.sim.workloads import get_workload, load_trace

DEFAULT_TRACE = "../shared/traces/mooncake_conversation_trace.jsonl"


def _cpu(fn: Any) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trace", default=None, help=f"a Mooncake trace (default {DEFAULT_TRACE})")
    p.add_argument("--workload", default=None, help="a built-in workload instead of a trace")
    p.add_argument("--page-size", type=int, default=None, help="default 512 (trace), 1 (workload)")
    p.add_argument("--sizes", default="1M..16M+1M", help="pool sizes, sweep's range syntax")
    p.add_argument("--limit", type=int, default=0, help="only the first N trace requests")
    p.add_argument("--no-check", action="store_true", help="skip the per-size replays")
    args = p.parse_args()
    if args.workload:
        wl: Any = get_workload(args.workload)
        page = args.page_size or 1
    else:
        wl = load_trace(args.trace or DEFAULT_TRACE, limit=args.limit)
        page = args.page_size or 512
    sizes = parse_counts(args.sizes, "--sizes")
    mid = sorted(sizes)[len(sizes) // 2]
    t_one, _ = _cpu(lambda: replay(wl, "lru", pool_tokens=mid, page_size=page,
                                   timeline_points=0, workload_info={}))
    t_curve, curve = _cpu(lambda: pool_curve(wl, sizes, page))
    fell_back = [pt.pool_tokens for pt in curve.points if pt.source == REPLAY]
    print(f"{wl.name}: page {page}, {wl.num_requests:,} requests, {len(curve.points)} sizes")
    print(f"  one replay ({mid:,})   {t_one:7.2f} s CPU")
    print(f"  curve, {len(curve.points)} sizes      {t_curve:7.2f} s CPU   "
          f"{t_curve / t_one:.2f}x one replay   (pass {curve.pass_s:.2f} s wall; "
          f"{len(fell_back)} sizes replayed on their own: {fell_back or 'none'})")
    if args.no_check:
        return 0
    bad = 0
    t_all = 0.0
    print(f"  {'pool':>12} {'curve':>8} {'replay':>8}  equal")
    for pt in curve.points:
        t, r = _cpu(lambda pt=pt: replay(wl, "lru", pool_tokens=pt.pool_tokens, page_size=page,
                                         timeline_points=0, workload_info={}))
        t_all += t
        same = (r.hit_tokens, r.evicted_tokens, r.evict_calls, r.failed, r.p50_uncached,
                r.p90_uncached, r.p99_uncached, r.mean_uncached) == (
            pt.hit_tokens, pt.evicted_tokens, pt.evict_calls, pt.failed, pt.p50_uncached,
            pt.p90_uncached, pt.p99_uncached, pt.mean_uncached)
        four = round(r.hit_rate, 4) == round(pt.hit_rate, 4)
        bad += not (same and four)
        print(f"  {pt.pool_tokens:>12,} {pt.hit_rate:8.4f} {r.hit_rate:8.4f}  "
              f"{'exact' if same else 'DIFFERS'}{'' if pt.source != REPLAY else ' (replayed)'}")
    print(f"  per-size replays {t_all:7.2f} s CPU: the curve is {t_all / t_curve:.1f}x faster; "
          f"{len(curve.points) - bad}/{len(curve.points)} sizes equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
