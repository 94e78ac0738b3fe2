"""radix-evict's hybrid cache against SGLang 0.5.23's unified tree (SWA, Mamba): every decision.

    python bench/bench_hybrid_vs_sglang.py                       # swa and mamba, pages 1 and 16
    python bench/bench_hybrid_vs_sglang.py --kinds swa --pages 16 --convs 1200 --policy lfu
    python bench/bench_hybrid_vs_sglang.py --hicache-ratio 1 --write-policy write_through

Both sides replay the same multi-turn chat (``tests/helpers/sglang_rig.chat_events``,
600 conversations = 2,091 requests by default) with the operations of
``tests/helpers/hybrid_rig.py``: SGLang's real ``UnifiedRadixCache`` (its Python and
its Rust tree core, ``--backends``) with its
``SWAComponent`` or ``MambaComponent`` over its own allocators on CPU, and
radix-evict's ``HybridRadixCache``. After every event the two must agree on every
operation's result and on the pools and ledgers per component. Each row prints
whether they did (or the first event where they did not), how often each kind
of decision came up, the hit tokens (reusable prefix) against what full KV
alone would have served, and each side's seconds.

``--hicache-ratio`` turns on each side's host tier (``tests/helpers/hybrid_host_rig.py``:
SGLang's HiCache over index-only host pools and its controller's own allocation paths,
radix-evict's ``HostTierSpec`` of the same ratio); each event then also compares the host
hits per component, the load-backs, and the host pools and per-component counters
(written, loaded back, freed on host), and each row adds them.

Needs ``make sglang-env`` (SGLang's wheel unpacked in build/sglang-env). Exit
code 1 when any configuration differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def run(kind: str, page: int, backend: str, a: argparse.Namespace, events: list
        ) -> dict[str, Any]:  # fmt: skip
    from helpers import hybrid_rig as rig

    full, aux = (a.full, a.swa) if kind == "swa" else (a.full, a.states)
    shape = (kind, full, aux, page, a.window, a.policy, a.mamba_grid)
    if a.hicache_ratio is None:
        sides = [rig.SGLangSide(*shape, backend=backend), rig.RadixEvictSide(*shape)]
    else:
        from helpers import hybrid_host_rig as host

        # Whole pages, as SGLang's pool configurator makes them
        # (model_executor/pool_configurator.py:646-652, 1460-1464): the host pools are
        # sized from the device pools, which radix-evict keeps in whole pages.
        full, aux = full // page * page, aux // page * page if kind == "swa" else aux
        shape = (kind, full, aux, page, a.window, a.policy, a.mamba_grid)
        hshape = (*shape, a.write_policy, a.hicache_ratio)
        sides = [host.SGLangHostSide(*hshape, backend=backend), host.RadixEvictHostSide(*hshape)]
    steps: list[list[Any]] = []
    seconds = []
    for side in sides:
        t = time.perf_counter()
        steps.append(list(rig.replay(side, events)))
        seconds.append(time.perf_counter() - t)
    first_diff = None
    for i, (x, y) in enumerate(zip(*steps, strict=True)):
        if (x.ops, x.ledger) != (y.ops, y.ledger):
            first_diff = {"event": i, "sglang": [x.ops, x.ledger], "radix_evict": [y.ops, y.ledger]}
            break
    ops = [op for s in steps[1] for op in s.ops]
    seen = Counter(op[0] for op in ops)
    hosted: dict[str, Any] = {}
    if a.hicache_ratio is not None:
        led = steps[1][-1].ledger
        hosted = {
            "write_policy": a.write_policy, "hicache_ratio": a.hicache_ratio,
            "host_hits": sum(1 for op in ops if op[0] == "host" and any(op[1:])),
            "load_backs": seen["load_back"],
            "loaded_ok": sum(1 for op in ops if op[0] == "load_back" and op[1]),
            "written": [led[8], led[9]], "loaded": [led[10], led[11]],
            "host_freed": [led[12], led[13]],
        }  # fmt: skip
    return {**hosted,
        "kind": kind, "page": page, "backend": backend, "policy": a.policy, "full": full,
        "aux": aux,
        "window": a.window if kind == "swa" else None, "events": len(events),
        "requests": seen["match"], "equal": first_diff is None, "first_diff": first_diff,
        "evictions": seen["evict"], "aux_short_evictions": sum(
            1 for op in ops if op[0] == "evict" and op[2]),
        "refused": seen["refused"],
        "cut_by_aux": sum(1 for op in ops if op[0] == "match" and op[1] < op[2]),
        "hit_tokens": sum(op[1] for op in ops if op[0] == "match"),
        "full_only_hit_tokens": sum(op[2] for op in ops if op[0] == "match"),
        "sglang_s": round(seconds[0], 2), "radix_evict_s": round(seconds[1], 2),
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default="swa,mamba")
    p.add_argument("--pages", default="1,16")
    p.add_argument("--backends", default="python,rust", help="SGLang's tree cores to compare")
    p.add_argument("--convs", type=int, default=600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--policy", default="lru")
    p.add_argument("--full", type=int, default=8000, help="full-attention pool, tokens")
    p.add_argument("--swa", type=int, default=3000, help="window pool, tokens")
    p.add_argument("--window", type=int, default=256, help="sliding window, tokens")
    p.add_argument("--states", type=int, default=48, help="Mamba state pool, states")
    p.add_argument("--mamba-grid", type=int, default=64, help="SGLang's mamba chunk size")
    p.add_argument("--hicache-ratio", type=float, help="host tier of this ratio on both sides")
    p.add_argument("--write-policy", default="write_through",
                   choices=["write_through", "write_through_selective"])  # fmt: skip
    p.add_argument("--json-out")
    a = p.parse_args()

    from helpers.sglang_env import env_missing_reason

    reason = env_missing_reason()
    if reason:
        print(f"{reason}; run: make sglang-env", file=sys.stderr)
        return 2
    from helpers.sglang_env import _install
    from helpers.sglang_rig import chat_events

    _install()
    events = chat_events(convs=a.convs, seed=a.seed)
    rows = [run(k, int(pg), b, a, events) for k in a.kinds.split(",")
            for pg in a.pages.split(",") for b in a.backends.split(",")]  # fmt: skip
    print(
        f"{'kind':6} {'page':>4} {'core':6} {'requests':>8} {'equal':>6} {'evict':>6} "
        f"{'aux-ev':>6} "
        f"{'refused':>7} {'cut':>5} {'hit tok':>9} {'full-only':>9} {'SGLang s':>8} {'r-e s':>6}"
    )
    for r in rows:
        print(f"{r['kind']:6} {r['page']:>4} {r['backend']:6} {r['requests']:>8} {r['equal']!s:>6} "
              f"{r['evictions']:>6} {r['aux_short_evictions']:>6} {r['refused']:>7} "
              f"{r['cut_by_aux']:>5} {r['hit_tokens']:>9} {r['full_only_hit_tokens']:>9} "
              f"{r['sglang_s']:>8} {r['radix_evict_s']:>6}")  # fmt: skip
        if "host_hits" in r:
            print(f"  host: {r['host_hits']} matches with a host hit, {r['loaded_ok']}/"
                  f"{r['load_backs']} load-backs, written {r['written']}, loaded {r['loaded']},"
                  f" freed on host {r['host_freed']} (full, aux)")  # fmt: skip
        if r["first_diff"]:
            print(f"  first difference: {r['first_diff']}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
