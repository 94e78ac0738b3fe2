"""``radix-evict plan``: options and rendering; the library (``sim.fleet.plan*``) does the rest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from radix_evict.sim.fleet.plan import DEFAULT_MAX_REPLICAS, PlanSetting, Probe, probe_line
from radix_evict.sim.fleet.plan_setup import DEFAULT_ROUTER, PlanRequest, prepare_plan
from radix_evict.sim.fleet.plan_table import plan_table

from . import output
from .command import options_command, plain, token_count
from .errors import mark_json
from .simulate_options import HYBRID_FIELDS, KvMemoryOpt, MambaRatioOpt, ModelArchOpt, SwaRatioOpt
from .simulate_report import render
from .sweep_options import Texts, _opt


@dataclass(frozen=True)
class PlanOptions:
    """Every ``plan`` option as given; fields in panel order."""

    trace: Annotated[Path | None, _opt("--trace", help="JSONL trace (Mooncake, ...), replayed "
                                       "at its recorded timestamps.")] = None
    workload: Annotated[str | None, _opt("--workload", "-w", help="Built-in workload (instead "
                                         "of --trace).", show_default="chat")] = None
    param: Annotated[Texts, _opt("--param", "-P", help="Workload or trace parameter KEY=VALUE "
                                 "(repeatable), e.g. limit=2000 for a trace's first requests."
                                 )] = None
    seed: Annotated[int, _opt("--seed", min=0, help="Workload and router seed.")] = 0
    slo_ttft: Annotated[float, _opt("--slo-ttft", min=0.0, help="The TTFT SLO in ms.")] = ...  # type: ignore[assignment]
    percentile: Annotated[int, _opt("--percentile", min=1, max=100,
                                    help="The TTFT percentile the SLO holds (1..100).")] = 99
    policy: Annotated[Texts, _opt("--policy", "-p", help="Policy (repeatable): one of "
                                  "{choices}.", show_default="lru")] = None
    config: Annotated[Texts, _opt("--config", "-c", help="Policy config: JSON for the --policy "
                                  "in the same position, NAME=JSON or @FILE.")] = None
    router: Annotated[Texts, _opt("--router", help="Router (repeatable): NAME or NAME=JSON "
                                  "(its config, checked strictly).",
                                  show_default=DEFAULT_ROUTER)] = None
    host_tokens: Annotated[Texts, _opt("--host-tokens", help="Host tier sizes (a setting each; "
                                       "0 = none): N1,N2 with K/M/G.", show_default="0")] = None
    max_replicas: Annotated[int, _opt("--max-replicas", min=1, help="Search no further than "
                                      "this many replicas.")] = DEFAULT_MAX_REPLICAS
    start_replicas: Annotated[int, _opt("--start-replicas", min=1, help="The first probe (a "
                                        "guess: the search goes below it if it meets).")] = 1
    pool_tokens: Annotated[int | None, _opt("--pool-tokens", parser=token_count(1),
                                            help="KV pool per replica, tokens (4M).",
                                            show_default="the workload's")] = None
    page_size: Annotated[int, _opt("--page-size", min=1, help="Tokens per KV page.")] = 1
    cost_model: Annotated[str | None, _opt("--cost-model", help="Preset ({presets}) or file.",
                                           show_default="llama3-8b-h100")] = None
    max_running: Annotated[int | None, _opt("--max-running", min=1, help="Most requests running "
                                            "at once per replica.", show_default="SGLang's")] = None
    model_arch: ModelArchOpt = None
    kv_memory: KvMemoryOpt = None
    swa_full_tokens_ratio: SwaRatioOpt = None
    mamba_full_memory_ratio: MambaRatioOpt = None
    jobs: Annotated[int, _opt("--jobs", "-j", min=1, help="Worker processes: probes of several "
                              "settings run at once.")] = 1
    ray: Annotated[str | None, _opt("--ray", help="Run the probes as Ray tasks, as sweep --ray "
                                    "(auto, HOST:PORT, ray://..., local).")] = None
    out: Annotated[Path | None, _opt("--out", "-o", help="Result file (.jsonl, .csv, .parquet): "
                                     "each probe's sweep row; a rerun reuses them.")] = None
    json_out: Annotated[bool, _opt("--json", help="Print the plan as JSON.")] = False
    progress: Annotated[bool, _opt("--progress/--no-progress", help="A line per probe on "
                                   "stderr.")] = True


PANELS = {
    "Workload": ("trace", "workload", "param", "seed"),
    "SLO and search": ("slo_ttft", "percentile", "max_replicas", "start_replicas"),
    "Settings": ("policy", "config", "router", "host_tokens"),
    "Replica": ("pool_tokens", "page_size", "cost_model", "max_running", *HYBRID_FIELDS),
    "Execution and output": ("jobs", "ray", "out", "json_out", "progress"),
}


@options_command(PlanOptions, PANELS)
def plan(ctx: typer.Context, opts: PlanOptions) -> None:
    """Find the fewest replicas each policy (and router, host tier) needs for a TTFT SLO.

    Each probe replays the whole workload at its recorded rate on N replicas behind
    the router; the search probes 1, 2, 4, ... then bisects. Prints the table and the
    answer: how many GPUs a policy (router, host tier) saves.
    """
    mark_json(ctx.obj, opts.json_out)
    prepared = prepare_plan(plain(opts, PlanRequest))

    def heard(s: PlanSetting, probe: Probe) -> None:
        if opts.progress and not opts.json_out:
            output.note(probe_line(s, probe, opts.slo_ttft, opts.percentile))

    result = prepared.run(on_probe=heard)
    if opts.json_out:
        output.emit_json(result.to_json())
        return
    con = output.stdout()
    con.print(render(plan_table(result)))
    for line in [*result.answers(), *(f"note: {n}" for n in result.notes())]:
        con.print(line, markup=False, highlight=False)
