"""radix-evict's speed against SGLang 0.5.23's Rust tree core, per page size; and an outside anchor.

    python bench/bench_vs_sglang.py                       # pages 1, 16 and 512, 3 runs each
    python bench/bench_vs_sglang.py --page-sizes 16 --runs 5 --check-equal
    python bench/bench_vs_sglang.py --anchor-only         # only the libCacheSim anchor
    python bench/bench_vs_sglang.py --device cuda --check-equal --no-anchor   # on a GPU

Part 1 runs the peer harness (``../shared/peer/sglang_bench.py``, with the
Python of the SGLang environment ``setup.sh`` made, ``../peer-env``) once per
page size, ``--impl unified-rust,radix-evict`` (``--check-equal`` adds
unified-py and compares every figure), and prints radix-evict's median
requests per second over SGLang's Rust core for each of the eight policies
and their geometric mean. Pages 1 and 16 replay the harness's synthetic chat
workload (its default seed unless ``--seed``); page 512 the first 4,000
requests of the Mooncake conversation trace, as issue #25 measures them. Within
a policy the harness alternates the implementations run by run, so compare
ratios, not requests per second across runs: on a shared machine those drift.

Part 2 is an anchor outside SGLang: one flat stream of independent keys
(Zipf-distributed, each request one block of one token, page size 1) through
radix-evict's ``lru`` (match; on a miss evict one if full, alloc, insert) and
through libCacheSim's ``LRU`` (``cache.get`` per request) in this process,
requests per second of each and their hit counts, which must agree: both are
exact LRU over the same capacity. libCacheSim is imported only here; without
it (``pip install libcachesim``) the anchor is skipped with a message.

``--device cuda`` (or ``cuda:N``) runs part 1 on a GPU through
``bench/peer_on_device.py``: SGLang's trees over a free list kept as a device
tensor (as SGLang's own allocators keep it) against radix-evict with a cuda
pool, the same workloads and checks. ``--python`` runs the harness with
another interpreter (a GPU machine's, with ``SGLANG_SRC`` pointing at the
unpacked SGLang wheel) instead of the peer environment's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
POLICIES = ["lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo"]
RUST = "unified-rust"
MINE = "radix-evict"
TRACE_PAGE = 512  # the page size replayed on the Mooncake trace (the others: synthetic)


def harness_command(a: argparse.Namespace, page: int) -> list[str]:
    """The peer harness's command line for one page size (run in the peer folder)."""
    entry = ["sglang_bench.py"] if a.device == "cpu" else [
        str(HERE / "peer_on_device.py"), "--device", a.device]
    where = ["--dir", str(a.env)] if a.env.exists() else []
    cmd = [
        str(a.python), *entry, *where, "--impl", f"{RUST},{MINE}",
        "--runs", str(a.runs), "--page-size", str(page), "--policies", ",".join(a.policies),
    ]
    if a.check_equal:
        cmd.append("--check-equal")
    if page == TRACE_PAGE:
        cmd += ["--trace", str(a.trace), "--trace-limit", str(a.trace_limit)]
    elif a.seed is not None:
        cmd += ["--seed", str(a.seed)]
    return cmd


def run_harness(a: argparse.Namespace, page: int) -> dict[str, Any]:
    """One harness run for ``page``; its --json-out record, plus the command and exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = harness_command(a, page)
        shown = " ".join(cmd)
        print(f"# page {page}: (cd {a.peer} && {shown})", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "--json-out", out], cwd=a.peer, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
        if not os.path.exists(out):
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
            raise SystemExit(f"page {page}: the harness wrote no results (exit {proc.returncode})")
        with open(out) as fh:
            record: dict[str, Any] = json.load(fh)
    record["command"] = shown
    record["exit_code"] = proc.returncode
    record["wall_s"] = wall
    return record


def ratios(record: dict[str, Any]) -> dict[str, float | None]:
    """radix-evict's median req/s over the Rust core's, per policy (None: a side failed)."""
    speed = {(r["impl"], r["policy"]): r.get("req_per_s") for r in record["results"]}
    out: dict[str, float | None] = {}
    for pol in record["policies"]:
        mine, rust = speed.get((MINE, pol)), speed.get((RUST, pol))
        out[pol] = mine / rust if mine and rust else None
    return out


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(page: int, record: dict[str, Any]) -> dict[str, Any]:
    wl = record["workload"]
    what = (f"trace {os.path.basename(wl['path'])}, first {wl['requests']} requests"
            if wl["kind"] == "trace" else f"synthetic seed {wl['seed']}, {wl['requests']} requests")
    print(f"page {page} ({what}, median of {record['args']['runs']} runs)")
    speed = {(r["impl"], r["policy"]): r.get("req_per_s") for r in record["results"]}
    per = ratios(record)
    checks = {p["policy"]: p for p in record.get("check_equal", {}).get("policies", [])}
    print(f"  {'policy':9s} {'rust req/s':>11s} {'radix-evict':>12s} {'ratio':>7s}"
          + ("  check-equal" if checks else ""))
    for pol, r in per.items():
        rust, mine = speed.get((RUST, pol)), speed.get((MINE, pol))
        verdict = ""
        if checks:
            c = checks.get(pol, {})
            why = c.get("differences") or c.get("problem")
            verdict = "  OK" if c.get("equal") else f"  DIFFERS {why}"
        print(f"  {pol:9s} {rust or float('nan'):11,.0f} {mine or float('nan'):12,.0f} "
              f"{r if r is not None else float('nan'):6.2f}x{verdict}")
    g = geomean([r for r in per.values() if r is not None])
    print(f"  {'geomean':9s} {'':11s} {'':12s} {g:6.2f}x")
    return {"page_size": page, "workload": wl, "command": record["command"],
            "per_policy": per, "geomean": g, "exit_code": record["exit_code"],
            "check_equal": record.get("check_equal")}


# ----------------------------------------------------------------------------- anchor
def anchor_keys(requests: int, universe: int, alpha: float, seed: int) -> np.ndarray:
    """A flat stream of independent keys: Zipf(alpha) over ``universe`` ids."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, universe + 1) ** alpha
    ids = rng.choice(universe, size=requests, p=weights / weights.sum())
    return ids.astype(np.int64)


def anchor_radix_evict(keys: np.ndarray, capacity: int) -> tuple[float, int]:
    """(req/s, hits) of radix-evict's lru, one one-token block per request, page size 1."""
    from radix_evict import KVPool, RadixCache

    pool = KVPool(capacity, page_size=1, device="cpu")
    cache = RadixCache(pool, policy="lru")
    hits = 0
    pc = time.perf_counter
    t0 = pc()
    for i in range(len(keys)):
        key = keys[i : i + 1]
        if cache.match_prefix(key).prefix_len:
            hits += 1
            continue
        if pool.available_size() < 1:
            cache.evict(1)
        slots = pool.alloc(1)
        assert slots is not None
        cache.insert(key, slots)
    return len(keys) / (pc() - t0), hits


def anchor_libcachesim(keys: np.ndarray, capacity: int) -> tuple[float, int] | None:
    """(req/s, hits) of libCacheSim's LRU over unit-size objects, or None without it."""
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    cache = lcs.LRU(cache_size=capacity)
    req = lcs.Request()
    req.obj_size = 1
    ids = keys.tolist()
    get = cache.get
    hits = 0
    pc = time.perf_counter
    t0 = pc()
    for k in ids:
        req.obj_id = k
        if get(req):
            hits += 1
    return len(ids) / (pc() - t0), hits


def anchor(a: argparse.Namespace) -> dict[str, Any]:
    keys = anchor_keys(a.anchor_requests, a.anchor_universe, a.anchor_alpha, a.anchor_seed)
    cap = a.anchor_capacity
    print(f"anchor: {len(keys):,} requests of one key (Zipf {a.anchor_alpha}, "
          f"{a.anchor_universe:,} keys, seed {a.anchor_seed}), capacity {cap:,}, page size 1")
    mine_rps, mine_hits = anchor_radix_evict(keys, cap)
    out: dict[str, Any] = {"requests": len(keys), "capacity": cap,
                           "radix_evict_lru": {"req_per_s": mine_rps, "hits": mine_hits}}
    print(f"  radix-evict lru     {mine_rps:12,.0f} req/s  hits {mine_hits:,}")
    lcs = anchor_libcachesim(keys, cap)
    if lcs is None:
        print("  libCacheSim LRU     skipped: libcachesim is not installed "
              "(.venv/bin/pip install libcachesim)")
        return out
    lcs_rps, lcs_hits = lcs
    out["libcachesim_lru"] = {"req_per_s": lcs_rps, "hits": lcs_hits}
    same = "same hits" if lcs_hits == mine_hits else "HITS DIFFER"
    print(f"  libCacheSim LRU     {lcs_rps:12,.0f} req/s  hits {lcs_hits:,}  ({same})")
    print(f"  radix-evict / libCacheSim: {mine_rps / lcs_rps:.2f}x")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", type=Path, default=ROOT.parent / "shared" / "peer",
                   help="the folder of sglang_bench.py")
    p.add_argument("--env", type=Path, default=ROOT.parent / "peer-env",
                   help="the SGLang environment setup.sh made (its venv runs the harness)")
    p.add_argument("--page-sizes", default="1,16,512")
    p.add_argument("--runs", type=int, default=3, help="runs per implementation and policy")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--seed", type=int, default=None,
                   help="the synthetic workload's seed (default: the harness's own)")
    p.add_argument("--trace", type=Path, default=None,
                   help="the trace replayed at page 512 (default: the peer folder's "
                        "../traces/mooncake_conversation_trace.jsonl)")
    p.add_argument("--trace-limit", type=int, default=4000)
    p.add_argument("--check-equal", action="store_true",
                   help="also run unified-py and require equal figures (slower)")
    p.add_argument("--anchor-only", action="store_true")
    p.add_argument("--no-anchor", action="store_true")
    p.add_argument("--anchor-requests", type=int, default=200_000)
    p.add_argument("--anchor-universe", type=int, default=100_000)
    p.add_argument("--anchor-capacity", type=int, default=10_000)
    p.add_argument("--anchor-alpha", type=float, default=1.0)
    p.add_argument("--anchor-seed", type=int, default=7)
    p.add_argument("--device", default="cpu",
                   help="where both sides keep their pools: cpu (the harness as it is), "
                        "cuda, cuda:N")
    p.add_argument("--python", type=Path, default=None,
                   help="the harness's interpreter (default: the --env venv's)")
    p.add_argument("--json-out", default=None)
    a = p.parse_args()
    a.policies = [x for x in a.policies.split(",") if x]
    a.peer = a.peer.resolve()
    a.env = a.env.resolve()
    a.python = a.python or a.env / "venv" / "bin" / "python"
    a.trace = (a.trace or a.peer.parent / "traces" / "mooncake_conversation_trace.jsonl").resolve()
    out: dict[str, Any] = {"pages": []}
    if not a.anchor_only:
        for what, path in (("harness", a.peer / "sglang_bench.py"), ("SGLang env", a.python)):
            if not path.exists() and not (what == "SGLang env" and a.python.name == str(a.python)):
                raise SystemExit(f"no {what} at {path} (see --peer, --env)")
        for page in (int(x) for x in a.page_sizes.split(",") if x):
            out["pages"].append(report(page, run_harness(a, page)))
    if not a.no_anchor:
        out["anchor"] = anchor(a)
    if a.json_out:
        with open(a.json_out, "w") as fh:
            json.dump(out, fh, indent=1)
    failed = [r["page_size"] for r in out["pages"] if r["exit_code"]]
    if failed:
        raise SystemExit(f"the harness failed (or found figures that differ) at pages {failed}")


if __name__ == "__main__":
    main()
