"""``radix-evict sglang check``: can SGLang, here, run radix-evict's policies, this setting,
and these HiCache (host tier) options?"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from radix_evict.inputs import InputError, load_json
from radix_evict.sglang.check import CheckReport, HiCacheVerdict, check

from . import output
from .errors import EXIT_INVALID, EXIT_OK, EXIT_USAGE, CliError, mark_json
from .options import read_config_arg

CONFIG_FLAG = "--radix-eviction-policy-config"

app = typer.Typer(
    name="sglang",
    help="Deploy radix-evict's policies in SGLang (its plugin system): check where you stand.",
    no_args_is_help=True,
)

PolicyOpt = Annotated[str | None, typer.Option(
    "--radix-eviction-policy", help="The policy you would pass to SGLang's launch_server.")]
ConfigOpt = Annotated[str | None, typer.Option(
    "--radix-eviction-policy-config",
    help="Its config, as SGLang takes it: a JSON object string (or @FILE).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")]
HiCacheOpt = Annotated[bool, typer.Option(
    "--enable-hierarchical-cache", "--enable-hicache",
    help="HiCache (the host tier) on; with it and the --hicache-* options, say what SGLang "
         "does with them (values go to SGLang's parser as written).")]


RatioOpt = Annotated[str | None, typer.Option(
    "--hicache-ratio", help="Host pool size, times the device pool's.")]
SizeOpt = Annotated[str | None, typer.Option(
    "--hicache-size", help="Host pool size in GB (wins over the ratio).")]
FractionOpt = Annotated[str | None, typer.Option(
    "--hicache-host-memory-fraction", help="Share of host memory the default ratio may use.")]
ModeOpt = Annotated[str | None, typer.Option(
    "--hicache-host-memory-mode", help="cache or buffer_only.")]
WritePolicyOpt = Annotated[str | None, typer.Option(
    "--hicache-write-policy", help="write_through, write_through_selective or write_back.")]
IoBackendOpt = Annotated[str | None, typer.Option(
    "--hicache-io-backend", help="direct, kernel or kernel_ascend.")]
MemLayoutOpt = Annotated[str | None, typer.Option(
    "--hicache-mem-layout", help="The host pool's memory layout.")]
StorageOpt = Annotated[str | None, typer.Option(
    "--hicache-storage-backend", help="The storage (L3) backend.")]


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
def check_command(
    ctx: typer.Context,
    policy: PolicyOpt = None,
    config: ConfigOpt = None,
    hicache: HiCacheOpt = False,
    ratio: RatioOpt = None,
    size: SizeOpt = None,
    fraction: FractionOpt = None,
    mode: ModeOpt = None,
    write_policy: WritePolicyOpt = None,
    io_backend: IoBackendOpt = None,
    mem_layout: MemLayoutOpt = None,
    storage: StorageOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """SGLang's version, whether the plugin loads, the policies SGLang accepts, and for a
    setting: the startup error SGLang would raise, or the tree core that would run it.
    With HiCache's options: SGLang's verdict on them, the write policy, io backend and
    layout it would run, and how it would size the host pool.

    Exit codes: 0 the plugin loads (and the setting starts), 1 it does not, 2 no SGLang.
    """
    mark_json(ctx.obj, json_out)
    if config is not None and policy is None:
        raise CliError(f"{CONFIG_FLAG} needs --radix-eviction-policy", EXIT_USAGE)
    hicache_args = ["--enable-hierarchical-cache"] if hicache else []
    for flag, value in (("--hicache-host-memory-mode", mode), ("--hicache-ratio", ratio),
                        ("--hicache-size", size), ("--hicache-host-memory-fraction", fraction),
                        ("--hicache-write-policy", write_policy),
                        ("--hicache-io-backend", io_backend), ("--hicache-mem-layout", mem_layout),
                        ("--hicache-storage-backend", storage)):
        if value is not None:
            hicache_args.append(f"{flag}={value}")
    report = check(policy, _config(read_config_arg(config, CONFIG_FLAG), config), hicache_args)
    code = exit_code(report)
    if json_out:
        output.emit_json({"status": "ok" if code == EXIT_OK else "problem", **report.to_dict()})
    else:
        for line in report_lines(report):
            output.stdout().print(line, markup=False, highlight=False)
    if code != EXIT_OK:
        raise typer.Exit(code)


def exit_code(report: CheckReport) -> int:
    if report.sglang_error is not None:
        return EXIT_USAGE
    if report.hicache is not None and not report.hicache.ok:
        return EXIT_INVALID
    if report.setting is None and report.hicache is not None:
        return EXIT_OK
    if report.setting is not None:
        return EXIT_OK if report.setting.ok else EXIT_INVALID
    return EXIT_OK if report.plugin_active else EXIT_INVALID


def report_lines(r: CheckReport) -> list[str]:
    """The report for people: one fact per line, problems said plainly."""
    if r.sglang_error is not None:
        return [f"SGLang: not importable here ({r.sglang_error}); install sglang=="
                f"{r.supported_version} in this environment and run the check again"]
    version = r.sglang_version or "unknown version"
    note = "" if r.version_supported else (
        f" (radix-evict's plugin is written for {r.supported_version}; other versions may differ)")
    lines = [f"SGLang: {version}{note}"]
    if r.entry_point is None:
        lines.append("plugin: NOT declared (no entry point 'radix_evict' in group "
                     "sglang.srt.plugins; reinstall radix-evict in this environment)")
    else:
        lines.append(f"plugin: declared, {r.entry_point}")
    allow = "unset (every plugin loads)" if r.allow_list is None else ",".join(r.allow_list)
    verdict = "allowed" if r.plugin_allowed else "EXCLUDED: add radix_evict to SGLANG_PLUGINS"
    lines.append(f"SGLANG_PLUGINS: {allow} -> {verdict}")
    if r.plugin_error:
        lines.append(f"plugin: FAILED: {r.plugin_error}")
    elif r.plugin_active:
        added = ", ".join(r.added_policies) or "none"
        lines.append(f"plugin: registers; added policies: {added}; radix-evict validates every "
                     "policy's config")
    lines += [f"radix-evict policy package failed to load: {f}" for f in r.policy_package_failures]
    lines.append("--radix-eviction-policy accepts: " + ", ".join(r.accepted_policies))
    s = r.setting
    if s is not None:
        cfg = "" if s.config is None else f" {json.dumps(s.config)}"
        if s.ok:
            core = f"tree core: {s.tree_core}"
            if s.tree_core_reason:
                core += f" (fallback from rust: {s.tree_core_reason})"
            lines.append(f"setting {s.policy}{cfg}: OK, strategy {s.strategy}; {core}")
        else:
            lines.append(f"setting {s.policy}{cfg}: SGLang would refuse to start:")
            lines += ["  " + x for x in (s.error or "").splitlines()]
    if r.hicache is not None:
        lines += hicache_lines(r.hicache)
    return lines


def hicache_lines(h: HiCacheVerdict) -> list[str]:
    """What SGLang would do with the HiCache options, one fact per line."""
    if h.error is not None:
        return ["HiCache: SGLang would refuse to start:", f"  {h.error}"]
    if not h.enabled:
        lines = ["HiCache: off (no --enable-hierarchical-cache)"]
    else:
        storage = h.storage_backend or "none"
        lines = [f"HiCache: on, host memory mode {h.host_memory_mode}, storage backend {storage}",
                 f"HiCache write policy: {h.write_policy} ({h.write_policy_means})",
                 f"HiCache io backend: {h.io_backend}, host memory layout: {h.mem_layout}"]
        lines += [f"HiCache: SGLang rewrites {x}" for x in h.rewrites]
        lines += [f"  SGLang: {x}" for x in h.sglang_log if h.rewrites]
        lines.append(f"HiCache host pool: {h.host_size}")
    lines += [f"HiCache: warning: {w}" for w in h.warnings]
    return lines
