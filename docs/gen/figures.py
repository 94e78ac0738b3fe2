"""The measured figures: `radix-evict simulate --json` runs, results.json and the plot.

The figures are measured with ``RADIX_EVICT_PLUGINS=""`` so that installed
plugin packages do not change them; the traces are read in place from
``../shared/traces``, never copied into the project.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from radix_evict.outputs import replacing

from .common import DOCS, PROG, ROOT, run_name

FIGURES = DOCS / "figures"
RESULTS = FIGURES / "results.json"
PLOT = FIGURES / "policies.png"
TRACES = "../shared/traces"  # relative to the repository root; never copied into the project
TRACE_POOL_TOKENS = 4_000_000
# What depends on the machine and the moment (wall and CPU seconds, requests per second):
# printed while measuring, never written, so measuring again on any machine leaves
# results.json as it was wherever the figures themselves did not change.
MACHINE_DEPENDENT = frozenset({
    "elapsed_s", "wall_s", "cache_s", "eviction_s", "eviction_seconds", "req_per_s",
})
TRACE_PAGE_SIZE = 512


@dataclass(frozen=True)
class Run:
    """One `radix-evict simulate --json` run behind the figures."""

    key: str
    title: str
    args: tuple[str, ...]


def figure_runs(trace_limit: int = 0) -> list[Run]:
    """The built-in chat workload and the two Mooncake traces."""
    trace_args: tuple[str, ...] = (
        "--pool-tokens", str(TRACE_POOL_TOKENS), "--page-size", str(TRACE_PAGE_SIZE)
    )
    if trace_limit:
        trace_args += ("--param", f"limit={trace_limit}")
    return [
        Run("chat", "built-in `chat` workload", ()),
        Run("mooncake-synthetic", "Mooncake synthetic trace",
            ("--trace", f"{TRACES}/mooncake_synthetic_trace.jsonl", *trace_args)),
        Run("mooncake-conversation", "Mooncake conversation trace",
            ("--trace", f"{TRACES}/mooncake_conversation_trace.jsonl", *trace_args)),
    ]


# The timed verdict (docs/choosing.md): lru and tlru in the timed replay, one H100, the
# conversation trace's first 4,000 requests stretched 6x (about 65% busy).
TIMED_RUN = Run(
    "timed-conversation", "Mooncake conversation trace, timed replay",
    ("--timing", "--trace", f"{TRACES}/mooncake_conversation_trace.jsonl", "--param",
     "limit=4000", "--page-size", str(TRACE_PAGE_SIZE), "--pool-tokens", str(TRACE_POOL_TOKENS),
     "--time-scale", "6", "-p", "lru", "-p", "tlru", "--objective", "ttft-p99"))


def run_simulate(run: Run, oracle: bool = True) -> tuple[dict[str, Any], float, str]:
    """Run the CLI exactly as a user would; returns (its JSON, seconds, command shown).

    ``--oracle`` adds the offline bound and the infinite-pool ceiling (the figure runs).
    """
    args = ["simulate", *run.args, *(["--oracle"] if oracle else []), "--json", "--no-progress"]
    cmd = [sys.executable, "-c", "from radix_evict.cli import main; main()", *args]
    env = {**os.environ, "RADIX_EVICT_PLUGINS": ""}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{PROG} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    shown = f"RADIX_EVICT_PLUGINS= {PROG} {' '.join(args[:-1])}"
    return json.loads(proc.stdout), elapsed, shown


def reproducible(data: Any) -> Any:
    """``data`` without :data:`MACHINE_DEPENDENT` figures, its ``path`` values written
    relative to the checkout (``../shared/traces/NAME``), as the command names them."""
    if isinstance(data, Mapping):
        return {k: _relative(v) if k == "path" else reproducible(v)
                for k, v in data.items() if k not in MACHINE_DEPENDENT}
    if isinstance(data, list):
        return [reproducible(v) for v in data]
    return data


def _relative(path: Any) -> Any:
    if not isinstance(path, str) or not os.path.isabs(path):
        return path
    if "/shared/traces/" in path:  # measured on another machine's layout: same trace
        return f"{TRACES}/{path.rsplit('/shared/traces/', 1)[1]}"
    return os.path.relpath(path, ROOT)


def measure(trace_limit: int = 0, only: Iterable[str] | None = None) -> dict[str, Any]:
    """Run every figure run and collect the CLI's JSON (per-result workload copies dropped)."""
    from radix_evict import __version__

    wanted = set(only) if only else None
    runs = []
    for run in figure_runs(trace_limit):
        if wanted is not None and run.key not in wanted:
            continue
        print(f"running {run.key} ...", file=sys.stderr, flush=True)
        data, elapsed, shown = run_simulate(run)
        for r in data.get("results", []):
            r.pop("workload_info", None)
        print(f"  {run.key}: {elapsed:.1f} s", file=sys.stderr, flush=True)
        runs.append({"key": run.key, "title": run.title, "command": shown,
                     "simulate": reproducible(data)})
    return {
        "generated_by": "python docs/generate.py figures"
                        + (f" --trace-limit {trace_limit}" if trace_limit else ""),
        "radix_evict_version": __version__,
        "trace_limit": trace_limit,
        "runs": runs,
        "timed": measure_timed(),
    }


def measure_timed() -> dict[str, Any]:
    """The timed verdict's run (:data:`TIMED_RUN`), as ``results["timed"]``."""
    print(f"running {TIMED_RUN.key} ...", file=sys.stderr, flush=True)
    data, elapsed, shown = run_simulate(TIMED_RUN, oracle=False)
    for r in data.get("results", []):
        r.pop("workload_info", None)
    print(f"  {TIMED_RUN.key}: {elapsed:.1f} s", file=sys.stderr, flush=True)
    return {"key": TIMED_RUN.key, "title": TIMED_RUN.title, "command": shown,
            "simulate": reproducible(data)}


def load_results(path: Path = RESULTS) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def reference_rates(sim: Mapping[str, Any]) -> dict[str, float]:
    """The oracle's and the ceiling's hit rates of one run (empty without --oracle)."""
    out: dict[str, float] = {}
    oracle = next((r for r in sim["results"] if r["policy"] == "oracle"), None)
    if oracle is not None:
        out["oracle (offline bound)"] = oracle["hit_rate"]
    if "ceiling" in sim:
        out["ceiling (infinite pool)"] = sim["ceiling"]["hit_rate"]
    return out


def plot_results(results: Mapping[str, Any], path: Path = PLOT) -> None:
    """Hit rate per policy (top) and windowed hit rate over the replay (bottom), per run."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from .tables import policy_rows

    runs = results["runs"]
    policies: list[str] = []
    for run in runs:
        for r in policy_rows(run["simulate"]):
            if r["label"] not in policies:
                policies.append(r["label"])
    colors = {p: f"C{i}" for i, p in enumerate(policies)}
    fig, axes = plt.subplots(2, len(runs), figsize=(5.2 * len(runs), 8.4), squeeze=False)
    for col, run in enumerate(runs):
        sim = run["simulate"]
        res = policy_rows(sim)
        best = max(r["hit_rate"] for r in res)
        ax = axes[0][col]
        labels = [r["label"] for r in res]
        rates = [100 * r["hit_rate"] for r in res]
        bars = ax.bar(labels, rates, color=[colors[x] for x in labels])
        for bar, r in zip(bars, res, strict=True):
            weight = "bold" if r["hit_rate"] == best else "normal"
            ax.annotate(f"{100 * r['hit_rate']:.1f}", (bar.get_x() + bar.get_width() / 2,
                        bar.get_height()), ha="center", va="bottom", fontsize=8,
                        fontweight=weight)
        ax.set_title(f"{run_name(run)}\npool {sim['pool_tokens']:,} tokens, "
                     f"page {sim['page_size']}", fontsize=9)
        refs = reference_rates(sim)
        for (name, value), style in zip(refs.items(), ("--", ":"), strict=False):
            ax.axhline(100 * value, color="black", linestyle=style, linewidth=1,
                       label=f"{name} {100 * value:.1f}%")
        if refs:
            ax.legend(fontsize=7, loc="upper right")
        ax.set_ylabel("token hit rate (%)")
        ax.set_ylim(0, max([*rates, *(100 * v for v in refs.values())]) * 1.15 if rates else 1)
        ax.grid(axis="y", alpha=0.3)
        ax2 = axes[1][col]
        for r in res:
            xs = [p["requests"] for p in r["timeline"]]
            ys = [100 * p["hit_rate"] for p in r["timeline"]]
            ax2.plot(xs, ys, label=r["label"], color=colors[r["label"]], linewidth=1.1)
        ax2.set_xlabel("requests replayed")
        ax2.set_ylabel("hit rate per window (%)")
        ax2.grid(alpha=0.3)
        if col == 0:
            ax2.legend(fontsize=8)
    fig.suptitle("radix-evict simulate: token hit rate per policy (higher is better); "
                 "lines: offline bound (oracle) and infinite-pool ceiling")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:  # never half drawn
        fig.savefig(tmp, dpi=90, format=path.suffix[1:], metadata={"Software": None})
    plt.close(fig)

