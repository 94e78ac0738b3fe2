"""Where one sweep cell's time goes: a token or timed replay of a trace under cProfile.

The results page's sweep is as fast as its slowest kind of cell (issue #41:
timed replays of the non-lru policies are half its CPU time); this prints the
functions that take it, so a speed-up starts from a measurement. The replay
runs once unprofiled first (its CPU time printed: it holds when
other processes share the cores), then once profiled.

    .venv/bin/python bench/profile_cell.py ../shared/traces/mooncake_conversation_trace.jsonl \
        --policy lfu --pool-tokens 4M --page-size 512 --timing --time-scale 6
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from radix_evict.sim.replay import replay
from radix_evict.sim.sweep.values import SweepValueError, parse_count
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.traces.formats import open_trace


def token_count(text: str) -> int:
    """argparse's reader of a size in the sweep's syntax; its error says what is wanted."""
    try:
        return parse_count(text, "pool size")
    except SweepValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="a trace in any installed format")
    ap.add_argument("--policy", default="lru")
    ap.add_argument("--pool-tokens", type=token_count, default=4_000_000,
                    help="tokens: 4000000, 4M (the sweep's size syntax)")
    ap.add_argument("--page-size", type=int, default=512)
    ap.add_argument("--timing", action="store_true", help="the timed replay (default: token)")
    ap.add_argument("--time-scale", type=float, default=1.0, help="with --timing")
    ap.add_argument("--top", type=int, default=30, help="functions listed, by own time")
    args = ap.parse_args()

    workload = open_trace(args.trace)
    timing = TimingSpec(arrivals=ArrivalSpec(time_scale=args.time_scale)) if args.timing else None

    def run() -> None:
        replay(workload, args.policy, pool_tokens=args.pool_tokens, page_size=args.page_size,
               timing=timing)

    t0 = time.process_time()
    run()
    print(f"unprofiled replay: {time.process_time() - t0:.2f} s CPU")
    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
