"""What a host tier (SGLang's HiCache) costs per request, against the one-tier replay.

    python bench/bench_host_tier.py                  # chat; the Mooncake traces (4,000 requests)
    python bench/bench_host_tier.py --runs 5 --policy lru --write-policy write_back

The goal (issue: host tier): a two-tier replay costs at most 2x a one-tier
replay. Times are CPU seconds of this process (``time.process_time``: they
hold when other processes share the cores) for the whole replay, the
workload's own work included; runs alternate one-tier and two-tier, and the
figures are medians of ``--runs``. The host tier is SGLang's default size,
``--hicache-ratio 2``, so it writes, loads back and evicts throughout.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path
from typing import Any

from radix_evict.cache.host_tier import WRITE_POLICIES, HostTierSpec
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import Workload, get_workload, load_trace

TRACES = Path(__file__).resolve().parent.parent / ".." / "shared" / "traces"


def _cpu(*args: Any, **kwargs: Any) -> tuple[float, Any]:
    """CPU seconds of one ``replay(*args, **kwargs)``, and its result."""
    t0 = time.process_time()
    r = replay(*args, **kwargs)
    return time.process_time() - t0, r


def cases() -> list[tuple[str, Workload, int, int | None]]:
    """(label, workload, page size, pool) for each measured workload."""
    out: list[tuple[str, Workload, int, int | None]] = [
        ("chat, page 1", get_workload("chat", seed=0), 1, None),
    ]
    for name in ("mooncake_conversation_trace", "mooncake_synthetic_trace"):
        path = TRACES / f"{name}.jsonl"
        if path.exists():
            w = load_trace(path, limit=4000)
            out.append((f"{name} (4,000), page 16", w, 16, 1_000_000))
            out.append((f"{name} (4,000), page 512", w, 512, 1_000_000))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--policy", action="append", default=None)
    p.add_argument("--write-policy", action="append", default=None, choices=WRITE_POLICIES)
    p.add_argument("--ratio", type=float, default=2.0)
    args = p.parse_args()
    policies = args.policy or ["lru", "lfu"]
    writes = args.write_policy or list(WRITE_POLICIES)
    print(f"{'workload':44} {'policy':6} {'write policy':24} {'1-tier us/req':>13} "
          f"{'2-tier us/req':>13} {'ratio':>6} {'host hit':>8}")
    ratios = []
    for label, w, page, pool in cases():
        for policy in policies:
            for write in writes:
                host = HostTierSpec(ratio=args.ratio, write_policy=write)
                one, two = [], []
                hit = 0.0
                for _ in range(args.runs):
                    one.append(_cpu(w, policy, page_size=page, pool_tokens=pool)[0])
                    t, r = _cpu(w, policy, page_size=page, pool_tokens=pool, host=host)
                    two.append(t)
                    hit = r.host.host_hit_rate
                a, b = statistics.median(one), statistics.median(two)
                n = w.num_requests
                ratios.append(b / a)
                print(f"{label:44} {policy:6} {write:24} {1e6 * a / n:13,.1f} "
                      f"{1e6 * b / n:13,.1f} {b / a:6.2f} {100 * hit:7.1f}%", flush=True)
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    print(f"two-tier / one-tier: geometric mean {geo:.2f}x, worst {max(ratios):.2f}x "
          f"(goal: at most 2x)")


if __name__ == "__main__":
    main()
