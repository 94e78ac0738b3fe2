"""The TTFT no fleet can beat on a trace: each request's own prefill, with the best cache there is.

Every request is prefilled alone (no queueing, no other request in its
batch, no chunking), on a replica whose cache holds every block any earlier
request sent (an infinite cache and a router that always finds it), under a
cost model. Its prompt then costs the blocks no earlier request had,
attending to the cached prefix too. No replica count, policy or router
gets a request's TTFT under this, so a percentile SLO below this floor's
percentile is out of reach: ``radix-evict plan`` then reports that no
setting meets it. Prints the floor's percentiles and the share of requests
whose floor alone passes each SLO given.

    .venv/bin/python bench/ttft_floor.py ../shared/traces/mooncake_conversation_trace.jsonl \
        --slo-ms 5000 --slo-ms 10000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from radix_evict.sim.timed.cost import attention_pairs, load_cost_model


def floors_ms(path: Path, cost_model: str, block: int) -> np.ndarray:
    """Each request's prefill-only TTFT (ms) with every earlier block cached."""
    model = load_cost_model(cost_model)
    seen: set[int] = set()
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            length, hashes = int(r["input_length"]), r["hash_ids"]
            hit = 0
            for h in hashes:  # the cached prefix: leading blocks sent before
                if h not in seen:
                    break
                hit += 1
            cached = min(hit * block, length)
            new = length - cached
            out.append(model.prefill_ms(new, attention_pairs(cached, new), cached))
            seen.update(hashes)
    return np.asarray(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--cost-model", default="llama3-8b-h100")
    ap.add_argument("--block", type=int, default=512, help="tokens per hash_id (Mooncake: 512)")
    ap.add_argument("--slo-ms", type=float, action="append", default=[])
    args = ap.parse_args()
    ms = floors_ms(args.trace, args.cost_model, args.block)
    pcts = (50, 90, 95, 99, 99.5)
    print(f"{len(ms):,} requests; prefill-only TTFT floor ({args.cost_model}): "
          + ", ".join(f"p{p:g} {v / 1e3:.2f} s" for p, v in zip(pcts, np.percentile(ms, pcts),
                                                               strict=True)))
    for slo in args.slo_ms:
        print(f"SLO {slo / 1e3:g} s: {np.mean(ms > slo):.2%} of requests exceed it on their "
              "own prefill")


if __name__ == "__main__":
    main()
