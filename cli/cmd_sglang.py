"""``radix-evict sglang check``: can SGLang, here, run radix-evict's policies, and this setting?"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from radix_evict.inputs import InputError, load_json
from radix_evict.sglang.check import CheckReport, check

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
    json_out: JsonOpt = False,
) -> None:
    """SGLang's version, whether the plugin loads, the policies SGLang accepts, and for a
    setting: the startup error SGLang would raise, or the tree core that would run it.

    Exit codes: 0 the plugin loads (and the setting starts), 1 it does not, 2 no SGLang.
    """
    mark_json(ctx.obj, json_out)
    if config is not None and policy is None:
        raise CliError(f"{CONFIG_FLAG} needs --radix-eviction-policy", EXIT_USAGE)
    report = check(policy, _config(read_config_arg(config, CONFIG_FLAG), config))
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
    return lines
