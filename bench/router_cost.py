"""What ``cache_aware`` costs a request, alone: its tree and load count on a trace's prompts.

    python bench/router_cost.py                      # the Mooncake conversation trace
    python bench/router_cost.py --trace T --workers 4 --workers 64 --in-flight 32

Routes every prompt of the trace (token arrays, as a fleet replay hands them
over) with K in flight, the oldest finishing before the next is routed, and
prints the CPU time per request and how many workers were used. No replay:
this is the router's own share of a fleet replay's time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from radix_evict.sim.fleet.router import RoutedRequest
from radix_evict.sim.fleet.routers.cache_aware import CacheAwareConfig, CacheAwareRouter
from radix_evict.sim.traces.formats import open_trace

TRACE = Path(__file__).resolve().parents[2] / "shared/traces/mooncake_conversation_trace.jsonl"


def route_all(prompts: Sequence[RoutedRequest], workers: int, in_flight: int) -> tuple[float, int]:
    """CPU seconds to route ``prompts`` over ``workers``, and how many workers were used."""
    router = CacheAwareRouter(CacheAwareConfig(), replicas=workers)
    pending: deque[tuple[RoutedRequest, int]] = deque()
    used: set[int] = set()
    t0 = time.process_time()
    for req in prompts:
        if len(pending) == in_flight:
            router.on_finish(*pending.popleft())
        choice = router.route(req, ())
        pending.append((req, choice))
        used.add(choice)
    return time.process_time() - t0, len(used)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--workers", type=int, action="append")
    parser.add_argument("--in-flight", type=int, default=32)
    args = parser.parse_args(argv)
    reqs = [RoutedRequest(i, 0.0, r.prompt, r.session, len(r.prompt), len(r.output))
            for i, r in enumerate(open_trace(args.trace).requests())]
    tokens = sum(r.prompt_tokens for r in reqs)
    print(f"{args.trace.name}: {len(reqs):,} requests, {tokens:,} prompt tokens, "
          f"{args.in_flight} in flight")
    for workers in args.workers or [4, 16, 64]:
        seconds, used = route_all(reqs, workers, args.in_flight)
        print(f"workers={workers:<3d} {seconds:.2f} s CPU, "
              f"{1e6 * seconds / len(reqs):.0f} us a request, {used} workers used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
