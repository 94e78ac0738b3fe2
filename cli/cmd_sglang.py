"""``radix-evict sglang check``: can SGLang, here, run radix-evict's policies, this setting,
and these HiCache (host tier) options? The check and its report are core's
(:mod:`radix_evict.sglang.check`, :mod:`radix_evict.sglang.report`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from radix_evict.inputs import InputError, load_json, read_config_arg
from radix_evict.sglang.check import check
from radix_evict.sglang.report import OK, hicache_args, outcome, report_lines

from . import output
from .codes import OUTCOME_CODES
from .command import options_command
from .errors import EXIT_INVALID, EXIT_USAGE, CliError, mark_json

CONFIG_FLAG = "--radix-eviction-policy-config"
Text = str | None

app = typer.Typer(
    name="sglang",
    help="Deploy radix-evict's policies in SGLang (its plugin system): check where you stand.",
    no_args_is_help=True,
)


@dataclass(frozen=True)
class SglangCheckOptions:
    """``sglang check``'s options as given: a setting, HiCache's flags, the output."""

    policy: Annotated[Text, typer.Option(
        "--radix-eviction-policy", help="The policy you would pass to SGLang's launch_server.")] \
        = None
    config: Annotated[Text, typer.Option(
        CONFIG_FLAG, help="Its config, as SGLang takes it: a JSON object string (or @FILE).")] \
        = None
    hicache: Annotated[bool, typer.Option(
        "--enable-hierarchical-cache", "--enable-hicache",
        help="HiCache (the host tier) on; with it and the --hicache-* options, say what SGLang "
             "does with them (values go to SGLang's parser as written).")] = False
    ratio: Annotated[Text, typer.Option(
        "--hicache-ratio", help="Host pool size, times the device pool's.")] = None
    size: Annotated[Text, typer.Option(
        "--hicache-size", help="Host pool size in GB (wins over the ratio).")] = None
    fraction: Annotated[Text, typer.Option(
        "--hicache-host-memory-fraction",
        help="Share of host memory the default ratio may use.")] = None
    mode: Annotated[Text, typer.Option(
        "--hicache-host-memory-mode", help="cache or buffer_only.")] = None
    write_policy: Annotated[Text, typer.Option(
        "--hicache-write-policy",
        help="write_through, write_through_selective or write_back.")] = None
    io_backend: Annotated[Text, typer.Option(
        "--hicache-io-backend", help="direct, kernel or kernel_ascend.")] = None
    mem_layout: Annotated[Text, typer.Option(
        "--hicache-mem-layout", help="The host pool's memory layout.")] = None
    storage: Annotated[Text, typer.Option(
        "--hicache-storage-backend", help="The storage (L3) backend.")] = None
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print the report as JSON on stdout.")] = False

    def hicache_args(self) -> list[str]:
        """The HiCache flags given, as SGLang's argv."""
        return hicache_args(self.hicache, {
            "--hicache-host-memory-mode": self.mode, "--hicache-ratio": self.ratio,
            "--hicache-size": self.size, "--hicache-host-memory-fraction": self.fraction,
            "--hicache-write-policy": self.write_policy, "--hicache-io-backend": self.io_backend,
            "--hicache-mem-layout": self.mem_layout, "--hicache-storage-backend": self.storage})


PANELS = {"Setting": ("policy", "config"),
          "HiCache (host tier)": ("hicache", "ratio", "size", "fraction", "mode", "write_policy",
                                  "io_backend", "mem_layout", "storage"),
          "Output": ("json_out",)}


def _config(text: str | None, given: str | None) -> dict[str, Any] | None:
    """The config parsed as SGLang's ``json.loads`` does, within radix-evict's JSON limits."""
    if text is None:
        return None
    what = CONFIG_FLAG if given is None or not given.startswith("@") else f"{CONFIG_FLAG} {given}"
    try:
        data = load_json(text, what=what)
    except InputError as exc:  # nested too deep, a number too long
        raise CliError(str(exc), EXIT_INVALID) from None
    except ValueError as exc:  # json.JSONDecodeError and json's other refusals
        raise CliError(f"{what} is not JSON ({exc}); SGLang refuses it "
                       "when parsing its arguments", EXIT_INVALID) from None
    if data is not None and not isinstance(data, dict):
        shown = text if len(text) <= 80 else text[:77] + "..."  # a file's may be long
        raise CliError(f"{CONFIG_FLAG} must be a JSON object "
                       f"(SGLang passes it as keyword arguments), got {shown!r}", EXIT_INVALID)
    return data


@app.command("check")
@options_command(SglangCheckOptions, PANELS)
def check_command(ctx: typer.Context, o: SglangCheckOptions) -> None:
    """SGLang's version, whether the plugin loads, the policies SGLang accepts, and for a
    setting: the startup error SGLang would raise, or the tree core that would run it.
    With HiCache's options: SGLang's verdict on them, the write policy, io backend and
    layout it would run, and how it would size the host pool.

    Exit codes: 0 the plugin loads (and the setting starts), 1 it does not, 2 no SGLang.
    """
    mark_json(ctx.obj, o.json_out)
    if o.config is not None and o.policy is None:
        raise CliError(f"{CONFIG_FLAG} needs --radix-eviction-policy", EXIT_USAGE)
    report = check(o.policy, _config(read_config_arg(o.config, CONFIG_FLAG), o.config),
                   o.hicache_args())
    result = outcome(report)
    if o.json_out:
        output.emit_json({"status": "ok" if result == OK else "problem", **report.to_dict()})
    else:
        for line in report_lines(report):
            output.stdout().print(line, markup=False, highlight=False)
    if result != OK:
        raise typer.Exit(OUTCOME_CODES[result])
