"""What ``simulate --timing`` costs per request, against the untimed replay of the same workload.

    python bench/bench_timed.py                    # chat, the Mooncake traces (4,000 requests)
    python bench/bench_timed.py --runs 5 --policy lru --policy tlru

The goal (issue: timed replay): a timed replay costs at most 2x the untimed
one per request. Times are CPU seconds of this process (``time.process_time``:
they hold when other processes share the cores) for the whole replay, the
workload's own work included; runs alternate untimed and timed, and the
figures are medians of ``--runs``. The timed replay runs at each workload's
own arrival times (a trace's timestamps stretched 6x, about 65% busy on the
default cost model), so decode segments, queueing and chunked prefill all occur.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads import Workload, get_workload, load_trace

TRACES = Path(__file__).resolve().parent.parent / ".." / "shared" / "traces"


def _cpu(*args: Any, **kwargs: Any) -> float:
    """CPU seconds of one ``replay(*args, **kwargs)``."""
    t0 = time.process_time()
    replay(*args, **kwargs)
    return time.process_time() - t0


def cases() -> list[tuple[str, Workload, int, int | None, TimingSpec]]:
    """(label, workload, page size, pool, timing) for each measured workload."""
    out: list[tuple[str, Workload, int, int | None, TimingSpec]] = [
        ("chat, page 1", get_workload("chat", seed=0), 1, None, TimingSpec()),
    ]
    for name in ("mooncake_conversation_trace", "mooncake_synthetic_trace"):
        path = TRACES / f"{name}.jsonl"
        if path.exists():
            out.append((f"{name} (4,000), page 512", load_trace(path, limit=4000), 512,
                        4_000_000, TimingSpec(arrivals=ArrivalSpec(time_scale=6.0))))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--policy", action="append", default=None)
    args = p.parse_args()
    policies = args.policy or ["lru", "tlru"]
    print(f"{'workload':44} {'policy':7} {'untimed us/req':>15} {'timed us/req':>13} "
          f"{'ratio':>6}")
    ratios = []
    for label, w, page, pool, timing in cases():
        n = w.num_requests
        for policy in policies:
            untimed, timed = [], []
            replay(w, policy, pool_tokens=pool, page_size=page, timeline_points=0)  # warm up
            for _ in range(args.runs):
                untimed.append(_cpu(w, policy, pool_tokens=pool, page_size=page,
                                    timeline_points=0))
                timed.append(_cpu(w, policy, pool_tokens=pool, page_size=page,
                                  timeline_points=0, timing=timing))
            u, t = statistics.median(untimed) / n * 1e6, statistics.median(timed) / n * 1e6
            ratios.append(t / u)
            print(f"{label:44} {policy:7} {u:15.1f} {t:13.1f} {t / u:6.2f}", flush=True)
    print(f"geometric mean of timed/untimed: {statistics.geometric_mean(ratios):.2f} "
          f"(goal <= 2.0)")


if __name__ == "__main__":
    main()
