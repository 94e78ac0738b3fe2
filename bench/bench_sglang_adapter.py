"""What radix-evict's node adapter costs inside SGLang 0.5.23's unified tree (Python core).

    python bench/bench_sglang_adapter.py                    # chat replay, page 1, 3 runs
    python bench/bench_sglang_adapter.py --convs 600 --page-size 16 --json-out adapter.json

Runs SGLang's own cache (``UnifiedRadixCache``, Python tree core: where radix-evict's
policies run) with SGLang's native strategy and with radix-evict's policy of the same
name through the adapter (``BridgedStrategy``), on the same replay. Both make the same
decisions (checked), so the difference is the adapter:

- per ``get_priority``: every evictable leaf of the final tree scored by each strategy;
- per ``evict``: the median wall time of SGLang's ``evict_for_alloc`` over the replay's
  calls (it scores every evictable leaf, heapifies, and evicts). Target: the adapter
  within 2x of the native strategy.

``gdsf`` (no native counterpart) is shown next to native ``lru``. Runs alternate between
the two strategies so machine load affects both alike. SGLang comes from the installed
package, or else from ``make sglang-env``'s unpacked wheel.

Then the cost of delivering SGLang's tree events to a stateful policy (``--events-only``
runs just this part), on the unified tree (Python core) and the legacy tree: the whole
replay's wall time per request (the same rig work in every row, so the differences are
the cache's) for SGLang's native ``lru`` without the plugin (no wrappers at all) and with
it (the wrappers' one test per operation), radix-evict's ``lru`` through the adapter (no
events), the same ``lru`` with four empty lifecycle callbacks (same decisions: the pure
delivery cost, also per event delivered), and ``reuse`` (events and the policy's work).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the SGLang test environment and replay rig

PAIRS = ["lru", "lfu", "slru", "priority", "tlru", "fifo"]
CONFIGS: dict[str, dict[str, Any]] = {"tlru": {"threshold": 1024, "next_prompt_estimate": 128}}


def load_sglang() -> str:
    """Import SGLang (installed, or the test environment); return where it came from."""
    try:
        import sglang.srt.mem_cache.utils  # noqa: F401
    except ImportError:
        from helpers import sglang_env

        reason = sglang_env.env_missing_reason()
        if reason is not None:
            sys.exit(f"{reason}; run: {sglang_env.BUILD_COMMAND}")
        sglang_env.import_sglang()
        return f"test environment {sglang_env.ENV_DIR}"
    return "installed package"


def bridged_name(policy: str) -> str:
    """SGLang's name for radix-evict's ``policy`` through the adapter."""
    from sglang.srt.mem_cache import utils

    from radix_evict import registry
    from radix_evict.sglang import strategies

    name = policy if policy == "gdsf" else f"radix_evict_{policy}"
    utils._EVICTION_POLICY_FACTORIES.setdefault(name, strategies.bridged(policy, registry))
    return name


def per_get_priority(leaves: list[Any], strategy: Any, repeat: int = 5) -> float:
    """Nanoseconds per ``get_priority`` call over ``leaves`` (best of ``repeat``)."""
    get = strategy.get_priority
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for node in leaves:
            get(node)
        best = min(best, time.perf_counter() - t0)
    return best / max(len(leaves), 1) * 1e9


def measure(native: str, bridged: str, events: Any, a: argparse.Namespace) -> dict[str, Any]:
    from helpers import sglang_rig as rig
    from sglang.srt.mem_cache import utils

    config = CONFIGS.get(native)
    secs: dict[str, list[float]] = {native: [], bridged: []}
    figures: dict[str, Any] = {}
    for _ in range(a.runs):
        for name in (native, bridged):
            run: list[float] = []
            figures[name] = rig.replay_sglang(
                events, "unified-py", name, config, a.pool, a.page_size, evict_seconds=run
            )
            secs[name].append(statistics.median(run))
    # get_priority over the leaves of one final tree
    alloc = rig.PoolAllocator(a.pool * 16, a.page_size)  # room for every request's leaf
    cache = rig.build_sglang_cache("unified-py", alloc, native, config)
    _fill(cache, alloc, events, a.page_size)
    leaves = list(cache.tree_core.evictable_device_leaves)
    ns = {
        name: per_get_priority(leaves, utils.get_eviction_strategy(name, config))
        for name in (native, bridged)
    }
    t_native = statistics.median(secs[native])
    t_bridged = statistics.median(secs[bridged])
    twins = bridged != "gdsf"  # gdsf is compared with native lru: other decisions
    same = figures[native].hits == figures[bridged].hits if twins else None
    return {
        "native": native, "bridged": bridged, "leaves": len(leaves),
        "evict_calls": figures[bridged].evict_calls,
        "get_priority_ns": ns, "get_priority_ratio": ns[bridged] / ns[native],
        "evict_us": {native: t_native * 1e6, bridged: t_bridged * 1e6},
        "evict_ratio": t_bridged / t_native, "same_decisions": same,
    }  # fmt: skip


def _fill(cache: Any, alloc: Any, events: Any, page: int) -> None:
    """Insert every finished request (no eviction): a tree with many leaves to score."""
    import numpy as np
    from helpers.sglang_rig import radix_key
    from sglang.srt.mem_cache.base_prefix_cache import InsertParams

    for kind, req in events:
        if kind != "finish":
            continue
        full = np.concatenate([req.prompt, req.out])
        n = len(full) // page * page
        row = alloc.alloc(n)
        if row is None:
            return
        cache.insert(InsertParams(key=radix_key(full[:n]), value=row))


class _Noop:
    """radix-evict's lru plus four empty lifecycle callbacks, counting what it hears."""

    def __init__(self, policy: Any) -> None:
        self.delivered = 0
        self.wrapped = policy

    def make(self) -> Any:
        from radix_evict.policies.contract import EvictionPolicy

        outer = self

        class NoopCallbacks(EvictionPolicy):
            name = "lru"

            def score(self, node: Any) -> Any:
                return outer.wrapped.score(node)

            def on_hit(self, node: Any) -> None:
                outer.delivered += 1

            def on_split(self, head: Any, tail: Any) -> None:
                outer.delivered += 1

            def on_insert(self, node: Any) -> None:
                outer.delivered += 1

            def on_evict(self, node: Any) -> None:
                outer.delivered += 1

        return NoopCallbacks()


def _factory(build: Any) -> Any:
    def factory(**config: Any) -> Any:
        return build()

    factory.radix_evict_bridged = True  # type: ignore[attr-defined]
    return factory


def measure_events(events: Any, a: argparse.Namespace) -> list[dict[str, Any]]:
    """Per tree: microseconds per request of each row above (median of ``a.runs``)."""
    from helpers import sglang_rig as rig
    from sglang.srt.mem_cache import utils

    from radix_evict import registry
    from radix_evict.sglang import plugin
    from radix_evict.sglang.adapter import BridgedStrategy
    from radix_evict.sglang.events import make_events

    noop = _Noop(registry.load_policy("lru"))

    def noop_strategy() -> Any:
        policy = noop.make()
        return BridgedStrategy(policy, make_events(policy))

    requests = len(events) // 2
    rows = []
    plugin.register()
    for tree in ("unified-py", "legacy"):  # warm-up: SGLang's lazy imports, the registry
        rig.replay_sglang(rig.chat_events(5), tree, "reuse", None, a.pool, a.page_size)
    for tree in ("unified-py", "legacy"):
        names = ["lru (native, no plugin)", "lru (native)", "lru (adapter)",
                 "lru + empty callbacks", "reuse"]
        secs: dict[str, list[float]] = {n: [] for n in names}
        hits: dict[str, int] = {}
        delivered = 0
        for _ in range(a.runs):
            for n in names:
                if n == names[0]:
                    plugin.uninstall()
                else:
                    plugin.register()
                policy = {"lru (native, no plugin)": "lru", "lru (native)": "lru",
                          "lru (adapter)": bridged_name("lru"), "reuse": "reuse"}.get(n)
                if policy is None:
                    utils._EVICTION_POLICY_FACTORIES["radix_evict_noop"] = _factory(noop_strategy)
                    policy = "radix_evict_noop"
                    noop.delivered = 0
                t0 = time.perf_counter()
                fig = rig.replay_sglang(events, tree, policy, None, a.pool, a.page_size)
                secs[n].append(time.perf_counter() - t0)
                hits[n] = fig.hits
                if policy == "radix_evict_noop":
                    delivered = noop.delivered
        us = {n: statistics.median(v) / requests * 1e6 for n, v in secs.items()}
        extra = us["lru + empty callbacks"] - us["lru (adapter)"]
        per_event = extra * requests / max(delivered, 1)
        rows.append({"tree": tree, "us_per_request": us, "events_delivered": delivered,
                     "ns_per_event": per_event * 1e3,
                     "same_decisions": hits["lru + empty callbacks"] == hits["lru (native)"]})
    plugin.register()
    return rows


def print_events(rows: list[dict[str, Any]]) -> None:
    print("# event delivery: replay wall time per request (us, median)")
    for r in rows:
        us = r["us_per_request"]
        print(f"{r['tree']:10} " + "  ".join(f"{n}: {v:.1f}" for n, v in us.items()))
        print(f"{'':10} events delivered per replay {r['events_delivered']:,}, delivery "
              f"{r['ns_per_event']:.0f} ns per event; empty callbacks decide as lru: "
              f"{'yes' if r['same_decisions'] else 'NO'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--convs", type=int, default=300, help="conversations (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pool", type=int, default=8192, help="pool tokens (default 8192)")
    p.add_argument("--page-size", type=int, default=1)
    p.add_argument("--runs", type=int, default=3, help="replays per strategy (median)")
    p.add_argument("--policies", default=",".join(PAIRS),
                   help="native policies to pair with their adapted twin")
    p.add_argument("--json-out", type=Path)
    p.add_argument("--events-only", action="store_true",
                   help="only the cost of delivering tree events to a stateful policy")
    a = p.parse_args()
    where = load_sglang()
    from helpers import sglang_rig as rig

    from radix_evict.sglang import plugin

    plugin.register()
    events = rig.chat_events(a.convs, a.seed)
    if a.events_only:
        ev_rows = measure_events(events, a)
        print_events(ev_rows)
        if a.json_out:
            a.json_out.write_text(json.dumps({"args": vars(a) | {"json_out": str(a.json_out)},
                                              "events": ev_rows}, indent=2))
        return
    print(f"# SGLang from {where}; unified tree, Python core; {len(events) // 2} requests, "
          f"pool {a.pool}, page {a.page_size}, {a.runs} runs (medians)")
    print(f"{'native':10} {'adapted':20} {'leaves':>6} {'get_priority ns':>22} {'ratio':>6}"
          f" {'evict us (median)':>22} {'ratio':>6}  same decisions")
    rows = []
    pairs = [(n, bridged_name(n)) for n in a.policies.split(",")] + [("lru", bridged_name("gdsf"))]
    for native, bridged in pairs:
        r = measure(native, bridged, events, a)
        rows.append(r)
        g, e = r["get_priority_ns"], r["evict_us"]
        same = {True: "yes", False: "NO", None: "(different policy)"}[r["same_decisions"]]
        print(f"{native:10} {bridged:20} {r['leaves']:>6} {g[native]:>10.0f} {g[bridged]:>11.0f}"
              f" {r['get_priority_ratio']:>6.2f} {e[native]:>10.1f} {e[bridged]:>11.1f}"
              f" {r['evict_ratio']:>6.2f}  {same}")
    worst = max(r["evict_ratio"] for r in rows)
    print(f"# worst evict ratio adapted/native: {worst:.2f} (target <= 2.00: "
          f"{'met' if worst <= 2 else 'NOT met'})")
    ev_rows = measure_events(events, a)
    print_events(ev_rows)
    if a.json_out:
        a.json_out.write_text(json.dumps({"args": vars(a) | {"json_out": str(a.json_out)},
                                          "rows": rows, "events": ev_rows}, indent=2))


if __name__ == "__main__":
    main()
