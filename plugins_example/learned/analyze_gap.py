"""What the lru-to-oracle gap is made of, measured with the oracle's own knowledge.

    python plugins_example/learned/analyze_gap.py \\
        ../shared/traces/mooncake_conversation_trace.jsonl --page-size 512 --pool-tokens 4000000

An offline analysis, never part of the policy: it reads the future on purpose.
For each policy (``lru``, ``learned``, and Belady's ``oracle``) it replays the
trace and, at every eviction, asks the oracle's index of future arrivals
whether the victim is ever used again and how many requests after its
insertion it went. It reports:

* the share of evicted tokens that were *dead* (no later request uses them):
  an eviction of a live token is a future miss;
* when (in requests after insertion) dead and live tokens are evicted, and
  the share of dead tokens evicted "just inserted" (<= 16 requests old);
* two hybrids that show which knowledge closes the gap: ``lru`` that evicts
  leaves that are never used again first, whenever it knows (``lru+dead-first``),
  and ``lru`` that knows it only for a leaf just inserted or split off, at
  that moment (``lru+dead-at-insert``: a replay's output tail, and the whole
  new leaf when the request left no tail page).
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

from radix_evict_learned.policy import LearnedPolicy

from radix_evict import load_policy
from radix_evict.sim.oracle import OraclePolicy, oracle_workload
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads.trace import load_trace


def _recording(base: type, holder: list[OraclePolicy], tally: collections.Counter[Any],
               born: dict[Any, int]) -> type:
    """``base`` whose callbacks also tally each victim against the future of ``holder[0]``."""

    class Recording(base):  # type: ignore[valid-type,misc]
        def on_insert(self, node: Any) -> None:
            born[node] = holder[0].now
            if hasattr(base, "on_insert"):
                super().on_insert(node)

        def on_split(self, head: Any, tail: Any) -> None:
            born[head] = born.get(tail, holder[0].now)
            if hasattr(base, "on_split"):
                super().on_split(head, tail)

        def on_evict(self, node: Any) -> None:
            oracle = holder[0]
            dead = oracle.next_use(node) >= oracle.never
            age = oracle.now - born.pop(node, oracle.now)
            tally[dead, age] += node.num_tokens
            if hasattr(base, "on_evict"):
                super().on_evict(node)

    return Recording


def run(trace: Any, page: int, pool: int, which: str) -> tuple[float, collections.Counter[Any]]:
    wrapped, oracle = oracle_workload(trace, page)
    holder: list[OraclePolicy] = [oracle]
    tally: collections.Counter[Any] = collections.Counter()
    born: dict[Any, int] = {}
    policy: Any
    if which == "learned":  # the wrapped workload keeps driving the oracle's clock
        policy = _recording(LearnedPolicy, holder, tally, born)(load_policy("learned").config)
    else:
        lru = load_policy("lru")
        dead_at: dict[Any, bool] = {}

        class Hybrid(OraclePolicy):
            def score(self, node: Any) -> Any:
                if which == "oracle":
                    return (-self.next_use(node), 0)
                if which == "lru+dead-first":
                    dead = self.next_use(node) >= self.never
                else:
                    dead = dead_at.get(node, False)
                return (0 if dead else 1, lru.score(node))

            def on_insert(self, node: Any) -> None:
                dead_at[node] = which == "lru+dead-at-insert" and (
                    self.next_use(node) >= self.never)

            def on_split(self, head: Any, tail: Any) -> None:
                dead_at[tail] = which == "lru+dead-at-insert" and (
                    self.next_use(tail) >= self.never)

            def on_evict(self, node: Any) -> None:
                dead_at.pop(node, None)
                super().on_evict(node)

        policy = _recording(Hybrid, holder, tally, born)(oracle.future)
        holder[0] = policy
        wrapped.oracle = policy  # type: ignore[attr-defined]  # its clock now drives this one
    r = replay(wrapped, policy, pool_tokens=pool, page_size=page, timeline_points=0)
    return r.hit_rate, tally


def _median_age(tally: collections.Counter[Any], dead: bool) -> str:
    ages = sorted((a, v) for (d, a), v in tally.items() if d is dead)
    half = sum(v for _, v in ages) / 2
    run_total = 0
    for a, v in ages:
        run_total += v
        if run_total >= half:
            return str(a)
    return "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--page-size", type=int, default=512)
    ap.add_argument("--pool-tokens", type=int, default=4_000_000)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--policies", default="lru,learned,oracle,lru+dead-first,lru+dead-at-insert")
    args = ap.parse_args(argv)
    trace = load_trace(args.trace, limit=args.limit)
    print(f"{trace.name}: {trace.num_requests:,} requests, page {args.page_size}, "
          f"pool {args.pool_tokens:,} tokens")
    print("evicted tokens: dead = no later request uses them; live = a future miss; ages in "
          "requests since insertion (token-weighted median)")
    print(f"{'policy':<20} {'hit rate':>8} {'evicted tokens':>15} {'dead':>6} "
          f"{'dead, <=16 old':>15} {'live':>6} {'age dead':>9} {'age live':>9}")
    for which in args.policies.split(","):
        rate, tally = run(trace, args.page_size, args.pool_tokens, which)
        total = sum(tally.values()) or 1
        dead = sum(v for (d, _), v in tally.items() if d)
        young = sum(v for (d, a), v in tally.items() if d and a <= 16)
        print(f"{which:<20} {rate:>8.2%} {total:>15,} {dead / total:>6.1%} "
              f"{young / total:>15.1%} {1 - dead / total:>6.1%} "
              f"{_median_age(tally, True):>9} {_median_age(tally, False):>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
