"""``radix-evict validate``: the core's startup check of a policy and config, nothing more."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from radix_evict import registry
from radix_evict.errors import problem_lines
from radix_evict.inputs import read_config_arg
from radix_evict.policies.catalog import shown_config, startup_problems

from . import output
from .errors import mark_json, problems_code

PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="Policy name: one of {choices}.")]
ConfigOpt = Annotated[str | None, typer.Option(
    "--config", "-c", help="Policy config as a JSON object string, or @FILE.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def validate(
    ctx: typer.Context,
    policy: PolicyOpt,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check a policy and config exactly as the cache does at startup; print OK or every error."""
    mark_json(ctx.obj, json_out)
    text = read_config_arg(config)
    problems = startup_problems(registry, policy, text)
    shown: Any = None if text is None else shown_config(text)
    if json_out:
        output.emit_json({
            "status": "invalid" if problems else "ok",
            "policy": policy,
            "config": shown,
            "errors": [p.to_dict() for p in problems],
        })
    elif problems:
        for line in problem_lines(policy, problems):
            output.stderr().print(line, markup=False, highlight=False)
    else:
        cfg = "" if text is None else f" with config {json.dumps(shown)}"
        output.stdout().print(f"OK: policy {policy!r}{cfg}", markup=False, highlight=False)
    if problems:
        raise typer.Exit(problems_code(problems))
