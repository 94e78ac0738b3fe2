"""Engine replay with and without the radix cache: prefill work, wall time, TTFT.

Replays the CPU-sized `chat` workload (``radix_evict.sim.workloads.tiny.tiny_workload``)
through the tiny decoder once per policy and once with the cache disabled,
and prints one row each. A benchmark, not a test: the figures are for the
record (timings vary with the machine), the token counts are deterministic.

    .venv/bin/python bench/bench_engine.py [--device cuda:0] [--model tiny-gpu] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from radix_evict import registry
from radix_evict.engine import EngineResult, requests_from_workload, run_engine_replay
from radix_evict.engine.model import MODEL_PRESETS, TinyConfig
from radix_evict.engine.workload import default_pool_tokens
from radix_evict.sim.configs import resolve_config
from radix_evict.sim.workloads.tiny import tiny_workload


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None,
                    help="cpu, cuda or cuda:N (default: the current GPU, else cpu)")
    ap.add_argument("--model", default="tiny", help="tiny or tiny-gpu (sized for a GPU)")
    ap.add_argument("--policies", nargs="*", default=None, help="default: the public policies")
    ap.add_argument("--workload", default="chat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pool-tokens", type=int, default=None)
    ap.add_argument("--page-size", type=int, default=1)
    ap.add_argument("--max-running", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch cpu threads (1 keeps timings steady on a shared machine)")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args()


def _median_run(repeat: int, **kw: Any) -> EngineResult:
    """The run with the median wall time; token counts are identical across runs."""
    runs = sorted((run_engine_replay(**kw) for _ in range(repeat)), key=lambda r: r.wall_seconds)
    return runs[len(runs) // 2]


def main() -> None:
    a = _args()
    workload = tiny_workload(a.workload, seed=a.seed)
    vocab = TinyConfig().vocab_size
    requests = requests_from_workload(workload.requests(), vocab_size=vocab)
    pool = a.pool_tokens or default_pool_tokens(requests)
    common: dict[str, Any] = dict(requests=requests, pool_tokens=pool, page_size=a.page_size,
                                  device=a.device, max_running=a.max_running, seed=a.seed,
                                  cpu_threads=a.threads, model_config=MODEL_PRESETS[a.model])
    rows: list[EngineResult] = [_median_run(a.repeat, use_cache=False, **common)]
    for policy in a.policies or registry.choices():
        cfg = resolve_config(workload, policy, None).config  # derived where the policy derives
        rows.append(_median_run(a.repeat, policy=policy, config=cfg, **common))
    if a.json:
        print(json.dumps({"pool_tokens": pool, "requests": len(requests),
                          "rows": [r.to_dict() for r in rows]}, indent=2))
        return
    prompt = rows[0].prompt_tokens
    print(f"workload {a.workload} (tiny): {len(requests)} requests, {prompt} prompt tokens, "
          f"pool {pool} tokens, page {a.page_size}, device {rows[0].device}, "
          f"threads {a.threads}, median of {a.repeat}")
    head = (f"{'policy':<10}{'hit rate':>9}{'prefill tok':>12}{'evicted':>9}{'wall s':>8}"
            f"{'TTFT p50':>10}{'p90':>8}{'p99':>8}  (ms)")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r.policy:<10}{r.hit_rate:>9.3f}{r.prefill_tokens:>12}{r.evicted_tokens:>9}"
              f"{r.wall_seconds:>8.2f}{r.ttft(50):>10.2f}{r.ttft(90):>8.2f}{r.ttft(99):>8.2f}")
    base = rows[0].wall_seconds
    best = min(rows[1:], key=lambda r: r.wall_seconds)
    print(f"fastest cached: {best.policy}, {base / best.wall_seconds:.2f}x faster than no-cache, "
          f"prefilling {best.prefill_tokens / prompt:.0%} of the prompt tokens")


if __name__ == "__main__":
    main()
