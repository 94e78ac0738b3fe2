"""``sweep``'s options (:class:`SweepOptions`, one field each, in ``--help`` panels) and the
GridParts they give: the same axes a grid file gives, None where the command line gives none.

The timed replay's and the host tier's options share ``simulate``'s help
(``cli/simulate_options.py``); here they take lists (grid axes), but
``--write-threshold``, ``--host-config`` and the timed options every cell shares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from radix_evict.inputs import read_config_arg, split_named_config
from radix_evict.sim.sweep import GridParts, SweepValueError
from radix_evict.sim.sweep.fleet_axes import parse_router
from radix_evict.sim.sweep.grid import DEVICE_POLICY
from radix_evict.sim.sweep.run import MAX_CELLS
from radix_evict.sim.sweep.values import counts_of, names_of, numbers_of, parse_vary
from radix_evict.sim.timed.options import DEFAULT_OBJECTIVE
from radix_evict.sim.workloads.select import parse_params

from .command import ForceOpt
from .errors import EXIT_USAGE, CliError
from .simulate_options import (
    HICACHE_RATIO_HELP,
    HOST_CONFIG_HELP,
    HOST_POLICY_HELP,
    HOST_TOKENS_HELP,
    WRITE_POLICY_HELP,
    WRITE_THRESHOLD_HELP,
    ChunkedPrefillOpt,
    ConcurrencyOpt,
    SloTpotOpt,
    SloTtftOpt,
    TimeScaleOpt,
)

Texts = list[str] | None


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, **kw)


def _no_default(text: str) -> str:
    """simulate's shared help without its "(default ...)" prose: typer shows the default."""
    return re.sub(r" \(default: [^)]*\)", "", text).replace("(default; ", "(")


@dataclass(frozen=True)
class SweepOptions:
    """Every ``sweep`` option as given (lists None where not given); fields in panel order."""

    grid_file: Annotated[Path | None, _opt(
        "--grid", help="Grid file (.yaml, .yml or .toml) with the axes below as keys; options "
                       "given here replace the file's.")] = None
    workload: Annotated[Texts, _opt(
        "--workload", "-w", help="Built-in workload (repeatable or A,B).",
        show_default="chat, unless --trace is given")] = None
    trace: Annotated[list[Path] | None, _opt("--trace", help="Mooncake JSONL trace "
        "(repeatable); read once, shared by its cells.")] = None
    param: Annotated[Texts, _opt("--param", "-P", help="Workload parameter KEY=VALUE (every "
        "workload that has KEY), WORKLOAD.KEY=VALUE, or trace.KEY=VALUE (e.g. "
        "trace.limit=2000).")] = None
    seeds: Annotated[Texts, _opt("--seeds", show_default="0", help="Workload seeds S1,S2,...; "
        "a trace is the same for every seed and runs once.")] = None
    pool_tokens: Annotated[Texts, _opt(
        "--pool-tokens", help="Pool sizes in tokens: N1,N2,... with K/M/G suffixes (1M = "
                              "1,000,000) or a range 1M..16M*2.",
        show_default="each workload's own")] = None
    page_size: Annotated[Texts, _opt(
        "--page-size", help="Page sizes in tokens: N1,N2,...", show_default="1")] = None
    policy: Annotated[Texts, _opt(
        "--policy", "-p", help="Policy (repeatable or A,B): one of {choices}.",
        show_default="the policies named by -g, else the five public ones")] = None
    vary: Annotated[Texts, _opt("--vary", "-g", help="POLICY.KEY=V1,V2,... (repeatable): "
        "values to try for one config key; ranges 512..4096*2 (x2) or 1..9+2 (+2).")] = None
    hidden: Annotated[bool, _opt("--hidden", help="Also accept hidden policies (registered, "
        "not --policy choices: the baselines fifo, mru, filo) in --policy and -g.")] = False
    oracle: Annotated[bool, _opt(
        "--oracle", help="Also replay Belady's offline oracle at every pool size and the "
        "infinite-pool ceiling: reference lines for the curves, not policies.")] = False
    objective: Annotated[str | None, _opt(
        "--objective", help="What the summary's best config ranks by: hit-rate, ttft-p99 or slo "
        "(the last two with --timing; slo with --slo-ttft or --slo-tpot).",
        show_default=DEFAULT_OBJECTIVE)] = None
    timing: Annotated[bool, _opt(
        "--timing", help="Replay every cell through a continuous-batching server in virtual "
        "time (as simulate --timing): rows add TTFT, queueing, TPOT, end-to-end latency, SLO "
        "attainment, goodput; adds the axes --max-running, --rate, --cost-model.")] = False
    max_running: Annotated[Texts, _opt("--max-running", help="With --timing: most requests "
        "running at once, N1,N2,... (a grid axis; SGLang's --max-running-requests).",
        show_default="SGLang's default for the pool")] = None
    rate: Annotated[Texts, _opt(
        "--rate", help="With --timing: Poisson arrivals, R1,R2,... requests per second (a grid "
                       "axis; ranges 1..16*2).",
        show_default="the workload's own session starts and think times, or a trace's "
                     "timestamps")] = None
    cost_model: Annotated[Texts, _opt(
        "--cost-model", help="With --timing: cost models A,B,... (a grid axis): presets "
                             "({presets}) or TOML/JSON files (see `radix-evict calibrate`).",
        show_default="llama3-8b-h100")] = None
    concurrency: ConcurrencyOpt = None
    time_scale: TimeScaleOpt = None
    slo_ttft: SloTtftOpt = None
    slo_tpot: SloTpotOpt = None
    chunked_prefill_size: ChunkedPrefillOpt = None
    host_tokens: Annotated[Texts, _opt(
        "--host-tokens", help=f"{HOST_TOKENS_HELP} A grid axis: N1,N2,... with K/M/G or a range "
        "1M..8M*2; a 0 cell is the one-tier cell (its key unchanged).")] = None
    hicache_ratio: Annotated[Texts, _opt("--hicache-ratio", help=f"{HICACHE_RATIO_HELP} A grid "
        "axis: R1,R2,... (instead of --host-tokens).")] = None
    write_policy: Annotated[Texts, _opt(
        "--write-policy", help=f"{_no_default(WRITE_POLICY_HELP)} A grid axis: W1,W2,...",
        show_default="write_through")] = None
    host_policy: Annotated[Texts, _opt(
        "--host-policy", help=f"{_no_default(HOST_POLICY_HELP)} A grid axis: P1,P2,...",
        show_default=f"{DEVICE_POLICY}: the device policy, as SGLang does")] = None
    write_threshold: Annotated[int | None, _opt(
        "--write-threshold", min=1, show_default="the write policy's, 1 or 2",
        help=f"{_no_default(WRITE_THRESHOLD_HELP)} One value, for the write-through cells "
             "(write_back writes on device eviction).")] = None
    host_config: Annotated[Texts, _opt("--host-config", help=f"{HOST_CONFIG_HELP} Repeatable: "
        "NAME=JSON for host policy NAME; plain JSON or @FILE for the one --host-policy.")] = None
    admission: Annotated[Texts, _opt(
        "--admission", help="Host-tier admission policies A1,A2,... (a grid axis): 'selective', "
        "'tinylfu'; rows add refused backups and PCIe bytes.", show_default="none")] = None
    replicas: Annotated[Texts, _opt(
        "--replicas", help="With --timing: a fleet of N replicas behind --router, N1,N2,... (a "
                           "grid axis).", show_default="one server")] = None
    router: Annotated[Texts, _opt(
        "--router", help="With --timing: the fleet's router (repeatable; a grid axis): NAME or "
                         "NAME=JSON (its config, checked strictly).",
        show_default="round_robin with --replicas")] = None
    model_arch: Annotated[Texts, _opt("--model-arch", help="Hybrid models A1,A2,... (a grid "
        "axis: presets or TOML layouts; docs/hybrid.md); rows add the full-KV hit rate.")] = None
    kv_memory: Annotated[Texts, _opt("--kv-memory", show_default="--pool-tokens", help="With "
        "--model-arch: KV budgets M1,M2,... (a grid axis; 40GiB, split as SGLang does).")] = None
    swa_full_tokens_ratio: Annotated[Texts, _opt("--swa-full-tokens-ratio", show_default="0.8",
        help="With --model-arch: window/full tokens, R1,R2,... (a grid axis).")] = None
    mamba_full_memory_ratio: Annotated[Texts, _opt("--mamba-full-memory-ratio", help="With "
        "--model-arch: Mamba/full memory, R1,R2,... (a grid axis).", show_default="0.9")] = None
    ray: Annotated[str | None, _opt(
        "--ray", help="Run each cell as a Ray task: 'auto' (this machine's cluster or "
                      "RAY_ADDRESS), HOST:PORT, ray://HOST:PORT, or 'local' (a private Ray "
                      "here). Needs radix-evict\\[ray].")] = None
    jobs: Annotated[int | None, _opt("--jobs", "-j", min=1, help="Local worker processes.",
                                     show_default="every usable core")] = None
    max_cells: Annotated[int, _opt("--max-cells", min=1, help="Refuse a grid of more cells "
        "than this; raise it for a larger sweep.")] = MAX_CELLS
    dry_run: Annotated[bool, _opt("--dry-run", help="Check the grid and list its cells; "
        "replay nothing, change no file.")] = False
    progress: Annotated[bool, _opt(
        "--progress/--no-progress", help="Progress bar on a terminal.")] = True
    out: Annotated[Path | None, _opt("--out", "-o", help="Result file (.jsonl, .csv, or "
        ".parquet with pyarrow), written as cells finish; a rerun skips the cells already in "
        "it.")] = None
    json_out: Annotated[bool, _opt("--json", help="Print rows and summary as JSON.")] = False
    plot: Annotated[Path | None, _opt("--plot", help="Write the hit-rate curves (PNG, SVG or "
        "PDF); with a host tier, hit rate (and p99 TTFT, timed) over host size.")] = None
    force: ForceOpt = False


PANELS = {
    "Grid and workload": ("grid_file", "workload", "trace", "param", "seeds"),
    "Cache": ("pool_tokens", "page_size"),
    "Policies": ("policy", "vary", "hidden", "oracle", "objective"),
    "Timing (--timing)": ("timing", "max_running", "rate", "cost_model", "concurrency",
                          "time_scale", "slo_ttft", "slo_tpot", "chunked_prefill_size"),
    "Host tier": ("host_tokens", "hicache_ratio", "write_policy", "host_policy",
                  "write_threshold", "host_config", "admission"),
    "Fleet (--timing)": ("replicas", "router"),
    "Hybrid models": ("model_arch", "kv_memory", "swa_full_tokens_ratio",
                      "mamba_full_memory_ratio"),
    "Execution (jobs, Ray, resume)": ("ray", "jobs", "max_cells", "dry_run", "progress"),
    "Output": ("out", "json_out", "plot", "force"),
}


def _host_configs(values: Texts, policies: list[str] | None) -> dict[str, Any] | None:
    """``--host-config`` values -> {host policy: its config text}; a plain one needs one policy."""
    out: dict[str, Any] = {}
    for raw in values or ():
        name, text = split_named_config(raw)
        if name is None:
            if policies is not None and len(policies) > 1:
                raise CliError("a plain --host-config goes with one --host-policy; with several, "
                               "write --host-config NAME=JSON", EXIT_USAGE)
            name = policies[0] if policies else DEVICE_POLICY  # none: simulate's refusal
        if name in out:
            raise CliError(f"--host-config {name}=... given twice", EXIT_USAGE)
        out[name] = read_config_arg(text, "--host-config")
    return out or None


def grid_parts(o: SweepOptions) -> GridParts:
    """The axes and options the command line gives (None where it gives none); a value that
    does not parse is a usage error naming its option."""
    try:
        hosts = names_of(o.host_policy)
        return GridParts(
            policies=names_of(o.policy), vary=parse_vary(o.vary or ()),
            pool_tokens=counts_of(o.pool_tokens, "--pool-tokens"),
            page_sizes=counts_of(o.page_size, "--page-size"), workloads=names_of(o.workload),
            traces=[str(t) for t in o.trace or ()] or None,
            params=[(p.workload, p.key, p.value) for p in parse_params(o.param or ())] or None,
            seeds=counts_of(o.seeds, "--seeds"), references=True if o.oracle else None,
            hidden=True if o.hidden else None,
            timing=True if o.timing else None,
            max_running=counts_of(o.max_running, "--max-running"),
            rates=numbers_of(o.rate, "--rate"),
            cost_models=list(names_of(o.cost_model) or []) or None,
            concurrency=o.concurrency, time_scale=o.time_scale, slo_ttft=o.slo_ttft,
            slo_tpot=o.slo_tpot, chunked_prefill_size=o.chunked_prefill_size,
            objective=o.objective,
            host_tokens=counts_of(o.host_tokens, "--host-tokens"),
            hicache_ratios=numbers_of(o.hicache_ratio, "--hicache-ratio"),
            write_policies=names_of(o.write_policy),
            host_policies=[None if p == DEVICE_POLICY else p for p in hosts] if hosts else None,
            write_threshold=o.write_threshold, host_configs=_host_configs(o.host_config, hosts),
            admissions=names_of(o.admission),
            replicas=counts_of(o.replicas, "--replicas"),
            routers=[parse_router(r) for r in o.router] if o.router else None,
            model_archs=names_of(o.model_arch), kv_memories=names_of(o.kv_memory),
            swa_ratios=numbers_of(o.swa_full_tokens_ratio, "--swa-full-tokens-ratio"),
            mamba_ratios=numbers_of(o.mamba_full_memory_ratio, "--mamba-full-memory-ratio"))
    except SweepValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
