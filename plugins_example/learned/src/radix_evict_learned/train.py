"""Train ``learned`` on a trace and write its weights file, to start another replay from.

    python -m radix_evict_learned.train ../shared/traces/mooncake_synthetic_trace.jsonl \\
        --page-size 512 --pool-tokens 4000000 --out synthetic.weights.json
    radix-evict simulate --trace ../shared/traces/mooncake_conversation_trace.jsonl \\
        --page-size 512 --pool-tokens 4000000 -p lru -p learned \\
        --config '{"weights": "synthetic.weights.json", "warmup": 0}'

The replay is an ordinary one (``radix_evict.sim.replay``) with the policy
learning online as it always does; at the end its model is saved in the
format :mod:`radix_evict_learned.model` documents. ``--config`` takes the
policy's other keys as JSON (a ``weights`` key there continues training
from that file).
"""

from __future__ import annotations

import argparse
import json
import sys

from radix_evict import load_policy
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload
from radix_evict.sim.workloads.trace import load_trace

from .policy import LearnedPolicy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m radix_evict_learned.train",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("trace", help="a Mooncake trace, or 'workload:NAME' for a built-in one")
    ap.add_argument("--out", required=True, help="the weights file to write")
    ap.add_argument("--limit", type=int, default=0, help="first N requests of the trace")
    ap.add_argument("--page-size", type=int, default=512)
    ap.add_argument("--pool-tokens", type=int, default=None)
    ap.add_argument("--config", default=None, help="the policy's other keys, as JSON")
    args = ap.parse_args(argv)
    if args.trace.startswith("workload:"):
        workload = get_workload(args.trace.split(":", 1)[1])
    else:
        workload = load_trace(args.trace, limit=args.limit)
    config = json.loads(args.config) if args.config else None
    policy = load_policy("learned", config)
    assert isinstance(policy, LearnedPolicy)
    r = replay(workload, policy, pool_tokens=args.pool_tokens, page_size=args.page_size,
               timeline_points=0)
    source = (f"{workload.name}, page {r.page_size}, pool {r.pool_tokens:,} tokens, "
              f"{r.requests:,} requests, hit rate {r.hit_rate:.2%}")
    policy.save_weights(args.out, source=source)
    print(f"{args.out}: {policy.model.labels:,} labels; {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
