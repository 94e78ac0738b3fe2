"""``radix-evict vllm check``: what vLLM 0.33.0, here, would do with this offload config (the
check and its report are core's: :mod:`radix_evict.vllm.check`, :mod:`radix_evict.vllm.report`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from radix_evict.inputs import InputError, load_json, read_config_arg
from radix_evict.vllm.check import check
from radix_evict.vllm.report import OK, outcome, report_lines

from . import output
from .codes import OUTCOME_CODES
from .errors import EXIT_INVALID, CliError, mark_json

app = typer.Typer(
    name="vllm",
    help="Deploy radix-evict's policies in vLLM's CPU offload tier: check where you stand.",
    no_args_is_help=True,
)

PolicyOpt = Annotated[str | None, typer.Option(
    "--eviction-policy",
    help="kv_connector_extra_config's eviction_policy: vLLM's lru/arc, or radix_evict_POLICY.")]
ModuleOpt = Annotated[str | None, typer.Option(
    "--cache-policy-module-path",
    help="kv_connector_extra_config's cache_policy_module_path (radix-evict's: radix_evict.vllm).")]
ConfigOpt = Annotated[str | None, typer.Option(
    "--radix-eviction-config",
    help="kv_connector_extra_config's radix_eviction_config: a JSON object (or @FILE).")]
TransferOpt = Annotated[str | None, typer.Option(
    "--kv-transfer-config",
    help="The whole --kv-transfer-config vLLM takes: a JSON object (or @FILE); the options "
         "above override its kv_connector_extra_config keys.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")]


def _json_object(flag: str, value: str | None) -> dict[str, Any] | None:
    """A JSON object option: the text, or ``@FILE`` read through radix_evict.inputs."""
    text = read_config_arg(value, flag)
    if text is None:
        return None
    try:
        data = load_json(text, what=flag)
    except (InputError, ValueError) as e:
        raise CliError(f"{flag} is not JSON ({e}); vLLM refuses it when parsing its "
                       "arguments", EXIT_INVALID) from None
    if not isinstance(data, dict):
        raise CliError(f"{flag} must be a JSON object, got {type(data).__name__}",
                       EXIT_INVALID)
    return data


@app.command("check")
def check_command(
    ctx: typer.Context,
    policy: PolicyOpt = None,
    module_path: ModuleOpt = None,
    config: ConfigOpt = None,
    transfer: TransferOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """vLLM's version, the policy names it accepts, and for an offload config: the error vLLM
    would raise when it builds the policy, or what would run.

    Exit codes: 0 vLLM would run it, 1 it would fail, 2 no vLLM here (or an unreadable file).
    """
    mark_json(ctx.obj, json_out)
    kv = _json_object("--kv-transfer-config", transfer)
    radix = _json_object("--radix-eviction-config", config)
    try:
        report = check(kv, eviction_policy=policy, cache_policy_module_path=module_path,
                       radix_eviction_config=radix)
    except ValueError as e:  # a kv_connector_extra_config that is not an object
        raise CliError(f"--kv-transfer-config: {e}", EXIT_INVALID) from None
    result = outcome(report)
    if json_out:
        output.emit_json({"status": "ok" if result == OK else "problem", **report.to_dict()})
    else:
        for line in report_lines(report):
            output.stdout().print(line, markup=False, highlight=False)
    if result != OK:
        raise typer.Exit(OUTCOME_CODES[result])
