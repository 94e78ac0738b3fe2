"""What a fleet replay costs against the one-server timed replay of the same requests.

    python bench/bench_fleet.py                       # first 2,000 conversation-trace requests
    python bench/bench_fleet.py --runs 5 --router least_load --replicas 1,4,16,64

The goal (issue #38): a fleet replay of N replicas costs at most 1.5x the
single-server timed replay of the same requests, at N = 1, 4, 16 and 64: the
work is per request, not per replica. Times are CPU seconds of this process
(``time.process_time``) for the whole call, each replica's pool and cache
set-up included; the figures are medians of ``--runs``, the runs alternating
one server and the fleet. ``router s`` is the CPU time spent in the router's
``route`` (its own algorithm, measured per call); ``w/o router`` is the ratio
without it: the fleet replay's own cost. The trace replays at its recorded times (one
server is overloaded there; 64 replicas mostly idle), page 512, lru, the
default cost model (llama3-8b on an H100), each replica with a pool of
400,000 tokens (about what an 80 GB H100 holds for llama3-8b beside its
weights, at 128 KiB of KV a token). ``--pool`` sets another: each replica's
pool is set up on its own (its slot tables: about 60 MB and 0.08 s of CPU
for 4,000,000 tokens), which a fleet of many large pools pays N times.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.fleet.replay import FleetSpec, replay_fleet
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import load_trace

TRACES = Path(__file__).resolve().parent.parent / ".." / "shared" / "traces"
POOL = 400_000
PAGE = 512


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--trace", default="mooncake_conversation_trace")
    p.add_argument("--router", action="append", default=None)
    p.add_argument("--replicas", default="1,4,16,64")
    p.add_argument("--time-scale", type=float, default=1.0)
    p.add_argument("--pool", type=int, default=POOL, help="tokens per replica")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="of the runs' CPU times (min: the least disturbed on a busy machine)")
    args = p.parse_args()
    path = TRACES / f"{args.trace}.jsonl"
    if not path.exists():
        raise SystemExit(f"no trace at {path}")
    wl = load_trace(path, limit=args.requests)
    run = PolicyRun("lru")
    timing = TimingSpec(arrivals=ArrivalSpec(time_scale=args.time_scale))
    counts = [int(x) for x in args.replicas.split(",")]
    print(f"{wl.name}: {wl.num_requests:,} requests, page {PAGE}, pool {args.pool:,} per "
          "replica, "
          f"lru, time scale {args.time_scale:g}; CPU s, {args.stat} of {args.runs}")
    print(f"{'router':12} {'N':>3} {'one server':>11} {'fleet':>8} {'ratio':>6} "
          f"{'router s':>9} {'w/o router':>10} {'hit rate':>9} {'p99 TTFT s':>11}")
    worst = worst_own = 0.0
    for router in args.router or ["round_robin", "least_load", "session", "cache_aware",
                                  "kv_events"]:
        for n in counts:
            one, many, route = [], [], []
            hit = p99 = 0.0
            for _ in range(args.runs):
                t0 = time.process_time()
                replay(wl, run, pool_tokens=args.pool, page_size=PAGE, timing=timing,
                       timeline_points=0)
                t1 = time.process_time()
                f = replay_fleet(wl, run, pool_tokens=args.pool, page_size=PAGE, timing=timing,
                                 fleet=FleetSpec(n, router))
                t2 = time.process_time()
                one.append(t1 - t0)
                many.append(t2 - t1)
                route.append(f.route_s)
                hit, p99 = f.hit_rate, f.fleet.ttft_ms.p99 / 1e3
            stat = statistics.median if args.stat == "median" else min
            a, b, r = stat(one), stat(many), stat(route)
            worst = max(worst, b / a)
            worst_own = max(worst_own, (b - r) / a)
            print(f"{router:12} {n:3d} {a:11.2f} {b:8.2f} {b / a:6.2f} {r:9.2f} "
                  f"{(b - r) / a:10.2f} {hit:9.3f} {p99:11.1f}", flush=True)
    print(f"worst fleet / one server: {worst:.2f}; without the router's own CPU time: "
          f"{worst_own:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
