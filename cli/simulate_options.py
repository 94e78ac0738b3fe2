"""``simulate``'s options: names, types and help, apart from what the command does.

:class:`SimulateOptions` holds them all, one field each, in the ``--help``
panels :data:`PANELS` names; the command gets that one object, and the library
the same values as a :class:`~radix_evict.sim.simulate.SimulateSettings`
(:meth:`SimulateOptions.settings`). Defaults are shown one way, typer's
``[default: ...]``. The host tier's help is shared with ``sweep``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from radix_evict.sim.simulate import SimulateSettings
from radix_evict.sim.workloads import DEFAULT_WORKLOAD

from .command import ForceOpt, plain, token_count

PoolCurveOpt = Annotated[str | None, typer.Option(
    "--pool-curve",
    help="lru's hit rate and uncached tails at many pool sizes from one replay (the "
         "inclusion property; docs/pool-curve.md): sizes as sweep's --pool-tokens takes "
         "them, e.g. 1M..16M*2 or 250K,1M,4M. lru only; not with --pool-tokens, --timing, a "
         "host tier, --model or --enable-metrics. --oracle adds the oracle (one replay per "
         "size) and the ceiling; --plot draws the curve.")]

# The host tier's help, shared with ``sweep`` (cli/sweep_options.py), whose options take lists.
HOST_TOKENS_HELP = "Add a host tier (SGLang's HiCache) of N tokens; 0 = none (the one-tier replay)."
HICACHE_RATIO_HELP = ("Add a host tier sized as SGLang sizes --hicache-ratio R (a number above "
                      "0): floor(pool x R) rounded down to pages, plus one page.")
WRITE_POLICY_HELP = ("With a host tier: write_through (default; back up every new node), "
                     "write_through_selective (on its second insert) or write_back (on device "
                     "eviction).")
WRITE_THRESHOLD_HELP = ("With a host tier: the insert count that backs a node up (default: the "
                        "write policy's, 1 or 2).")
HOST_POLICY_HELP = ("With a host tier: the policy that ranks host-only nodes for host eviction "
                    "(default: the device policy, as SGLang does).")
HOST_CONFIG_HELP = "With --host-policy: its config (JSON or @FILE), checked strictly."

HostTokensOpt = Annotated[int | None, typer.Option(
    "--host-tokens", parser=token_count(0), help=HOST_TOKENS_HELP)]
HicacheRatioOpt = Annotated[float | None, typer.Option(  # R > 0: build_host says so
    "--hicache-ratio", help=HICACHE_RATIO_HELP)]
# simulate's own: the help above without its "(default ...)", the default as typer shows it.
WritePolicyOpt = Annotated[str | None, typer.Option(
    "--write-policy", show_default="write_through",
    help=WRITE_POLICY_HELP.replace("write_through (default; ", "write_through ("))]
WriteThresholdOpt = Annotated[int | None, typer.Option(
    "--write-threshold", min=1, show_default="the write policy's, 1 or 2",
    help=WRITE_THRESHOLD_HELP.replace(" (default: the write policy's, 1 or 2)", ""))]
HostPolicyOpt = Annotated[str | None, typer.Option(
    "--host-policy", show_default="the device policy, as SGLang does",
    help=HOST_POLICY_HELP.replace(" (default: the device policy, as SGLang does)", ""))]
HostConfigOpt = Annotated[str | None, typer.Option("--host-config", help=HOST_CONFIG_HELP)]

# The timed options sweep shares (cli/sweep_options.py) and a hybrid model's, which plan shares
# (cli/cmd_plan.py); the rest are SimulateOptions fields.
ConcurrencyOpt = Annotated[int | None, typer.Option(
    "--concurrency", min=1,
    help="With --timing: a closed loop of N clients; each sends its next request (or starts "
         "its next session) when the last one ends.")]
TimeScaleOpt = Annotated[float | None, typer.Option(
    "--time-scale", min=0.0,
    help="With --timing: multiply every inter-arrival and think time (2 = half speed, "
         "0.5 = double speed).")]
SloTtftOpt = Annotated[float | None, typer.Option(
    "--slo-ttft", min=0.0, help="With --timing: TTFT SLO in ms (adds SLO attainment, goodput).")]
SloTpotOpt = Annotated[float | None, typer.Option(
    "--slo-tpot", min=0.0, help="With --timing: time-per-output-token SLO in ms.")]
ChunkedPrefillOpt = Annotated[int | None, typer.Option(
    "--chunked-prefill-size", min=0,
    help="With --timing: prefill a long prompt in chunks of N tokens (SGLang's option; "
         "0 = no chunking).", show_default="8192")]
HYBRID_FIELDS = ("model_arch", "kv_memory", "swa_full_tokens_ratio", "mamba_full_memory_ratio")
ModelArchOpt = Annotated[str | None, typer.Option(
    "--model-arch", help="Replay through a hybrid model's cache (sliding window or Mamba state "
    "beside full attention, as SGLang's unified tree keeps them; docs/hybrid.md): "
    "gpt-oss-120b, gemma-3-27b, qwen3-next-80b-a3b, llama-3-8b or a TOML layout.")]
KvMemoryOpt = Annotated[str | None, typer.Option(
    "--kv-memory", help="With --model-arch: KV memory per server, e.g. 40GiB, split between "
    "the components as SGLang splits it.", show_default="--pool-tokens full tokens")]
SwaRatioOpt = Annotated[float | None, typer.Option("--swa-full-tokens-ratio", help="With "
    "--model-arch: window tokens per full token (SGLang's option).", show_default="0.8")]
MambaRatioOpt = Annotated[float | None, typer.Option("--mamba-full-memory-ratio", help="With "
    "--model-arch: Mamba state memory per full KV memory (SGLang's option).", show_default="0.9")]


PANELS = {
    "Workload": ("workload", "param", "trace", "trace_format", "block_size", "seed",
                 "list_workloads"),
    "Cache": ("pool_tokens", "page_size", "pool_curve"),
    "Policies": ("policy", "config", "oracle", "objective", "hints"),
    "Timing (--timing)": ("timing", "max_running", "rate", "concurrency", "time_scale",
                          "cost_model", "slo_ttft", "slo_tpot", "chunked_prefill_size"),
    "Fleet (--replicas)": ("replicas", "router", "router_config"),
    "Host tier": ("host_tokens", "hicache_ratio", "write_policy", "write_threshold",
                  "host_policy", "host_config", "admission"),
    "Output": ("json_out", "plot", "metrics", "force", "progress", "jobs"),
    "Model/engine (--model)": ("model", "device", "baseline"),
    "Hybrid models (--model-arch)": HYBRID_FIELDS,
}


@dataclass(frozen=True)
class SimulateOptions:
    """Every ``simulate`` option as given; fields in panel order (:data:`PANELS`)."""

    workload: Annotated[str | None, typer.Option(
        "--workload", "-w",
        help="Built-in workload, 'A,B' or 'all' for a policy x workload matrix "
             "(see --list-workloads).", show_default=DEFAULT_WORKLOAD)] = None
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-P",
        help="Workload parameter KEY=VALUE or WORKLOAD.KEY=VALUE (repeatable), "
             "e.g. convs=50.")] = None
    trace: Annotated[Path | None, typer.Option(
        "--trace",
        help="JSONL trace: Mooncake (512-token blocks), Alibaba Bailian/Qwen (16-token blocks, "
             "linked turns) or ServeGen offline, detected from the first record (see "
             "--trace-format); default pool 4,000,000 tokens.")] = None
    trace_format: Annotated[str, typer.Option(
        "--trace-format",
        help="With --trace: 'auto' (detect from the first record) or an installed format: "
             "mooncake, bailian, servegen, or one a package adds (entry points "
             "radix_evict.trace_formats).")] = "auto"
    block_size: Annotated[int | None, typer.Option(
        "--block-size", min=1,
        help="With --trace: tokens per hash_id block (ServeGen needs it).",
        show_default="the format's")] = None
    seed: Annotated[int, typer.Option("--seed", min=0, help="Workload (and model) seed.")] = 0
    list_workloads: Annotated[bool, typer.Option(
        "--list-workloads", help="List the built-in workloads and their parameters.")] = False
    pool_tokens: Annotated[int | None, typer.Option(
        "--pool-tokens", parser=token_count(1), help="KV pool size in tokens (4000000, 4M).",
        show_default="the workload's")] = None
    page_size: Annotated[int, typer.Option("--page-size", min=1, help="Tokens per KV page.")] = 1
    pool_curve: PoolCurveOpt = None
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p",
        help="Policy to replay (repeatable): one of {choices}. Registered but hidden (not offered "
             "here): {hidden}.", show_default="the five public ones")] = None
    config: Annotated[list[str] | None, typer.Option(
        "--config", "-c",
        help="Policy config (repeatable): JSON for the --policy in the same position, or "
             "NAME=JSON, or @FILE. tlru without one gets a config derived from the "
             "workload.")] = None
    oracle: Annotated[bool, typer.Option(
        "--oracle",
        help="Also replay the offline bound (Belady: evict the leaf used again farthest in the "
             "future) and the infinite-pool ceiling; adds an 'oracle' row and each policy's share "
             "of the lru-to-oracle gap. A reference, not a policy you can run. With --timing the "
             "oracle is a Belady-guided replay, not a bound: no gap is measured against "
             "it.")] = False
    objective: Annotated[str, typer.Option(
        "--objective",
        help="What the recommendation ranks by: hit-rate, ttft-p99 or slo (the last two with "
             "--timing; slo with --slo-ttft or --slo-tpot).")] = "hit-rate"
    hints: Annotated[list[str] | None, typer.Option(
        "--hints",
        help="What if clients sent this: hints derived from the workload itself, e.g. "
             "'session-end:coverage=0.5,error=0.05' (kinds: session-end, next-request; keys: "
             "coverage, error, seed). Policies that read the request context see them "
             "(docs/hints.md).")] = None
    timing: Annotated[bool, typer.Option(
        "--timing",
        help="Replay through a continuous-batching server in virtual time: TTFT, queueing, "
             "TPOT, end-to-end latency, SLO attainment and goodput per policy.")] = False
    max_running: Annotated[int | None, typer.Option(
        "--max-running", min=1,
        help="With --timing: most requests running at once (SGLang's --max-running-requests).",
        show_default="SGLang's: min(2048, pool tokens / 2)")] = None
    rate: Annotated[float | None, typer.Option(
        "--rate", min=0.0,
        help="With --timing: Poisson arrivals, about R requests per second (a workload's new "
             "sessions come at R x sessions/requests per second).",
        show_default="the workload's own session starts and think times, or a trace's "
                     "timestamps")] = None
    concurrency: ConcurrencyOpt = None
    time_scale: TimeScaleOpt = None
    cost_model: Annotated[str | None, typer.Option(
        "--cost-model",
        help="With --timing: a preset ({presets}) or a TOML/JSON file (see `radix-evict "
             "calibrate`).", show_default="llama3-8b-h100")] = None
    slo_ttft: SloTtftOpt = None
    slo_tpot: SloTpotOpt = None
    chunked_prefill_size: ChunkedPrefillOpt = None
    replicas: Annotated[int | None, typer.Option(
        "--replicas", min=1,
        help="With --timing: N servers, each with its own pool, cache, policy and host tier, on "
             "one clock behind --router; fleet and per-replica figures (docs/fleet.md).")] = None
    router: Annotated[str | None, typer.Option(
        "--router", show_default="round_robin",
        help="With --replicas: the router that picks each request's replica (see `radix-evict "
             "routers`): round_robin, random, least_load, session, cache_aware, kv_events, "
             "or one a package adds.")] = None
    router_config: Annotated[str | None, typer.Option(
        "--router-config", help="With --router: its config (JSON or @FILE), checked "
                                "strictly.")] = None
    host_tokens: HostTokensOpt = None
    hicache_ratio: HicacheRatioOpt = None
    write_policy: WritePolicyOpt = None
    write_threshold: WriteThresholdOpt = None
    host_policy: HostPolicyOpt = None
    host_config: HostConfigOpt = None
    admission: Annotated[str | None, typer.Option(
        "--admission", show_default="none: every backup the write policy makes",
        help="Host-tier admission: which backups are written at all, 'selective' (SGLang's "
             "write_through_selective rule) or 'tinylfu' (a frequency sketch); "
             "docs/hints.md.")] = None
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False
    plot: Annotated[Path | None, typer.Option(
        "--plot",
        help="Write a PNG: hit rate and tail uncached tokens per policy, and hit rate over "
             "time.")] = None
    metrics: Annotated[Path | None, typer.Option(
        "--enable-metrics", help="Write the cache counters in Prometheus text format.")] = None
    force: ForceOpt = False
    progress: Annotated[bool, typer.Option(
        "--progress/--no-progress",
        help="Progress bar on a terminal for runs over a second.")] = True
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1,
        help="Worker processes for the replays (more processes than cores when that finishes "
             "sooner, e.g. 3 for 5 replays on 2 cores). The figures do not depend on it.",
        show_default="planned from the cores")] = None
    model: Annotated[str | None, typer.Option(
        "--model", help="Replay through a real decoder with K/V in the pool: 'tiny', or "
        "'tiny-gpu' (wide enough that prefill time grows with the prompt on a GPU).")] = None
    device: Annotated[str, typer.Option(
        "--device",
        help="With --model: auto, cpu, cuda or cuda:N (auto: the current GPU, else "
             "cpu).")] = "auto"
    baseline: Annotated[bool, typer.Option(
        "--baseline/--no-baseline", help="With --model: also run without a cache.")] = True
    model_arch: ModelArchOpt = None
    kv_memory: KvMemoryOpt = None
    swa_full_tokens_ratio: SwaRatioOpt = None
    mamba_full_memory_ratio: MambaRatioOpt = None

    def settings(self) -> SimulateSettings:
        """These options as the library takes them (every field of the same name)."""
        return plain(self, SimulateSettings)

