"""The GPU check: every figure issue #35 asks of a GPU machine, in one run of a few minutes.

    python bench/gpu_check.py                 # on a machine with a GPU and radix-evict installed
    python bench/gpu_check.py --quick         # fewer requests (about a minute)
    python bench/gpu_check.py --json-out gpu.json

Needs no network and no build step: an installed radix-evict (and, for part 1,
pytest; for part 4, an SGLang environment) is all. It prints, in order:

1. the tests marked ``cuda`` (``tests/gpu``), run with pytest;
2. the tiny decoder on the GPU: cached logits against uncached ones, and
   TTFT p50 with and without the cache (with the cache's own time per
   request beside it), at pages 1 and 16, for the cpu-sized ``tiny`` model and
   the ``tiny-gpu`` preset, whose prefill time grows with the prompt on a GPU;
3. cache operations on a cuda pool against a cpu pool, requests per second
   and the ratio, at pages 1, 16 and 512 (the built-in chat workload; the
   Mooncake conversation trace at page 512 when ``../shared/traces`` is
   there), with the decisions required equal;
4. SGLang 0.5.23's trees on the GPU against radix-evict on the GPU
   (``bench/bench_vs_sglang.py --device cuda``) when ``SGLANG_SRC`` names an
   unpacked SGLang wheel (or ``--sglang-python`` a peer environment).

Exit status 1 if a test failed, logits differed or decisions differed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TRACE = ROOT.parent / "shared" / "traces" / "mooncake_conversation_trace.jsonl"
POLICIES = ("lru", "slru", "lfu")


def run_cuda_tests() -> dict[str, Any]:
    """Part 1: pytest -m cuda over the test suite."""
    try:
        import pytest  # noqa: F401
    except ImportError:
        print("1. cuda tests: pytest is not installed here (carry its wheel); skipped")
        return {"ran": False}
    # tests/gpu holds them: collecting only it needs pytest and radix-evict's own
    # dependencies, not the dev tools the rest of the suite imports.
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider",
           str(ROOT / "tests" / "gpu")]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    print(f"1. cuda tests ({time.perf_counter() - t0:.0f} s): " + " ".join(cmd[2:]))
    for line in tail:
        print(f"   {line}")
    return {"ran": True, "exit_code": proc.returncode, "tail": tail}


def engine_figures(model: str, page: int, device: str, n: int) -> dict[str, Any]:
    """Part 2, one cell: cached vs uncached through the decoder on ``device``."""
    from radix_evict.engine import MODEL_PRESETS, run_engine_replay, tiny_chat_requests

    reqs = tiny_chat_requests()[:n]
    kw: dict[str, Any] = {"device": device, "page_size": page, "record_logits": True,
                          "pool_tokens": 4096, "model_config": MODEL_PRESETS[model]}
    cached = run_engine_replay(reqs, "lru", **kw)
    fresh = run_engine_replay(reqs, use_cache=False, **kw)
    worst = 0.0
    for a, b in zip(cached.logits, fresh.logits, strict=True):
        if a is not None and b is not None:
            worst = max(worst, float((a.float() - b.float()).abs().max()))
    return {
        "model": model, "page_size": page, "device": cached.device, "requests": len(reqs),
        "hit_rate": cached.hit_rate, "max_logit_diff": worst,
        "same_tokens": cached.generated == fresh.generated,
        "ttft_p50_cached_ms": cached.ttft(50), "ttft_p50_uncached_ms": fresh.ttft(50),
        "ttft_ratio": cached.ttft(50) / fresh.ttft(50) if fresh.ttft(50) else float("nan"),
        "cache_ms_per_request": cached.cache_ms_per_request,
        "wall_cached_s": cached.wall_seconds, "wall_uncached_s": fresh.wall_seconds,
    }


def run_engine(devices: list[str], n: int) -> list[dict[str, Any]]:
    print("2. the tiny decoder: cached vs uncached (lru, chat, 4,096-token pool)")
    print(f"   {'model':9s}{'device':>8s}{'page':>5s}{'hit':>7s}{'max |dlogit|':>13s}"
          f"{'TTFT p50 cached':>16s}{'uncached':>9s}{'ratio':>7s}{'cache ms/req':>13s}")
    rows = []
    for model in ("tiny", "tiny-gpu"):
        for device in devices:
            if model == "tiny-gpu" and device == "cpu":
                continue  # sized for a GPU: minutes on a cpu
            for page in (1, 16):
                r = engine_figures(model, page, device, n)
                rows.append(r)
                print(f"   {model:9s}{r['device']:>8s}{page:5d}{r['hit_rate']:7.1%}"
                      f"{r['max_logit_diff']:13.2e}{r['ttft_p50_cached_ms']:14.2f}ms"
                      f"{r['ttft_p50_uncached_ms']:7.2f}ms{r['ttft_ratio']:7.2f}"
                      f"{r['cache_ms_per_request']:13.3f}")
    return rows


def cache_ops(device: str, page: int, policy: str, limit: int) -> tuple[float, tuple[Any, ...]]:
    """Part 3, one cell: requests/s of the cache operations and the decisions' figures."""
    from radix_evict.sim.replay import replay
    from radix_evict.sim.workloads import get_workload

    if page == 512 and TRACE.exists():
        from radix_evict.sim.workloads.trace import load_trace

        workload = load_trace(TRACE, limit=limit)
        pool = 4_000_000 // 512 * 512 if limit > 1000 else 1_000_000
    else:
        workload = get_workload("chat")
        pool = None
    r = replay(workload, policy, pool_tokens=pool, page_size=page, device=device)
    return r.req_per_s, (r.hit_tokens, r.evicted_tokens, r.requests)


def run_cache_ops(device: str, limit: int, repeat: int) -> list[dict[str, Any]]:
    print(f"3. cache operations: a {device} pool against a cpu pool (median of {repeat})")
    print(f"   {'page':>5s} {'policy':7s}{'cpu req/s':>11s}{device + ' req/s':>14s}{'ratio':>7s}"
          "  decisions")
    rows = []
    for page in (1, 16, 512):
        for policy in POLICIES:
            speeds: dict[str, list[float]] = {"cpu": [], device: []}
            figures: dict[str, Any] = {}
            for _ in range(repeat):
                for dev in ("cpu", device):  # alternated: drift hits both alike
                    rps, figs = cache_ops(dev, page, policy, limit)
                    speeds[dev].append(rps)
                    figures[dev] = figs
            med = {d: sorted(v)[len(v) // 2] for d, v in speeds.items()}
            same = figures["cpu"] == figures[device]
            ratio = med[device] / med["cpu"]
            rows.append({"page_size": page, "policy": policy, "cpu_req_per_s": med["cpu"],
                         "device_req_per_s": med[device], "ratio": ratio, "equal": same})
            print(f"   {page:5d} {policy:7s}{med['cpu']:11,.0f}{med[device]:14,.0f}{ratio:7.2f}"
                  f"  {'equal' if same else 'DIFFER ' + str(figures)}")
    return rows


def run_sglang(device: str, python: str | None) -> dict[str, Any]:
    if not (python or os.environ.get("SGLANG_SRC")):
        print("4. SGLang on the GPU: no SGLANG_SRC and no --sglang-python; skipped "
              "(unpack the sglang 0.5.23 wheel and set SGLANG_SRC to run it)")
        return {"ran": False}
    cmd = [sys.executable, str(HERE / "bench_vs_sglang.py"), "--device", device, "--no-anchor",
           "--check-equal", "--runs", "3", "--python", python or sys.executable]
    print("4. SGLang on the GPU: " + " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT)
    return {"ran": True, "exit_code": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="the GPU to check (cuda or cuda:N)")
    ap.add_argument("--quick", action="store_true", help="fewer requests and repeats")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--sglang-python", default=None,
                    help="an interpreter whose environment imports SGLang (a peer env's)")
    ap.add_argument("--json-out", default=None)
    a = ap.parse_args()
    from radix_evict.cache.device import resolve_device

    device = str(resolve_device(a.device, "--device"))
    name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "-"
    print(f"# gpu check: {device} ({name}), torch {torch.__version__}, "
          f"python {sys.version.split()[0]}")
    out: dict[str, Any] = {"device": device, "device_name": name, "torch": torch.__version__}
    out["tests"] = {"ran": False} if a.skip_tests else run_cuda_tests()
    out["engine"] = run_engine(list(dict.fromkeys(["cpu", device])), 12 if a.quick else 27)
    out["cache_ops"] = run_cache_ops(device, 1000 if a.quick else 4000, 1 if a.quick else 3)
    out["sglang"] = run_sglang(device, a.sglang_python)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(out, indent=1))
    bad = [
        out["tests"].get("exit_code", 0) not in (0, 5),
        any(r["max_logit_diff"] > 1e-4 or not r["same_tokens"] for r in out["engine"]),
        any(not r["equal"] for r in out["cache_ops"]),
        out["sglang"].get("exit_code", 0) != 0,
    ]
    print("# gpu check: " + ("FAILED" if any(bad) else "all checks passed"))
    raise SystemExit(1 if any(bad) else 0)


if __name__ == "__main__":
    main()
