"""What the pool's slot-ownership checks cost per request: C page loops against numpy.

    python bench/bench_ownership.py                   # lru, page sizes 1 and 16
    python bench/bench_ownership.py --policies lru,tlru --page-sizes 1 --runs 5

Replays the built-in ``chat`` workload through fresh caches, alternating
between pools whose owner checks run in the C page loops
(``core/cache/_page_kernel.c``) and pools where numpy does the same checks (as
on other devices and in the interpreted build), and prints the median
requests per second of cache operations for each and the microseconds per
request between them. Both make the same decisions (the replays' figures are
compared). Run on a compiled install; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import torch

from radix_evict.cache import compiled, ownership
from radix_evict.sim.replay import ReplayResult, replay
from radix_evict.sim.workloads import get_workload

TLRU = {"threshold": 1024, "next_prompt_estimate": 128}


def one_replay(policy: str, page_size: int, kernel: Any) -> ReplayResult:
    """A replay whose pool checks through ``kernel`` (None: numpy)."""
    saved = ownership._KERNEL
    ownership._KERNEL = kernel  # read by each new PageOwners
    try:
        return replay(
            get_workload("chat"),
            policy,
            TLRU if policy == "tlru" else None,
            page_size=page_size,
        )
    finally:
        ownership._KERNEL = saved


def compare(policy: str, page_size: int, runs: int, kernel: Any) -> dict[str, Any]:
    loops: list[ReplayResult] = []
    numpy: list[ReplayResult] = []
    for _ in range(runs):  # interleaved, so drift on a shared machine hits both alike
        loops.append(one_replay(policy, page_size, kernel))
        numpy.append(one_replay(policy, page_size, None))
    a, b = loops[0], numpy[0]
    if (a.hit_rate, a.evicted_tokens) != (b.hit_rate, b.evicted_tokens):
        raise SystemExit(f"{policy} page {page_size}: the two builds decided differently")
    fast = statistics.median(r.req_per_s for r in loops)
    slow = statistics.median(r.req_per_s for r in numpy)
    return {
        "policy": policy,
        "page_size": page_size,
        "requests": a.requests,
        "c_loops_req_per_s": fast,
        "numpy_req_per_s": slow,
        "speedup": fast / slow,
        "us_per_request_saved": (1 / slow - 1 / fast) * 1e6,
    }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--policies", default="lru")
    p.add_argument("--page-sizes", default="1,16")
    p.add_argument("--runs", type=int, default=3, help="replays per variant (median req/s)")
    p.add_argument("--json-out", default=None)
    a = p.parse_args()
    kernel = compiled.page_kernel()
    if kernel is None:
        raise SystemExit("the C page loops are not built here (a compiled install builds them)")
    torch.set_num_threads(1)
    rows = [
        compare(pol, int(ps), a.runs, kernel)
        for pol in a.policies.split(",")
        if pol
        for ps in a.page_sizes.split(",")
        if ps
    ]
    print(f"# built-in workload 'chat', median of {a.runs} runs each; {compiled.describe()}")
    print(f"{'policy':9s} {'page':>5s} {'C loops req/s':>14s} {'numpy req/s':>12s} "
          f"{'speedup':>8s} {'us/req saved':>13s}")  # fmt: skip
    for r in rows:
        print(
            f"{r['policy']:9s} {r['page_size']:5d} {r['c_loops_req_per_s']:14,.0f} "
            f"{r['numpy_req_per_s']:12,.0f} {r['speedup']:7.2f}x {r['us_per_request_saved']:13.1f}"
        )
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
