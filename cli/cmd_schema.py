"""``radix-evict schema``: one JSON Schema for every registered policy's config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from radix_evict import registry
from radix_evict.outputs import check_output, starts_with
from radix_evict.policies.schema import SCHEMA_DIALECT

from . import output
from .command import ForceOpt
from .errors import mark_json

OutputOpt = Annotated[Path | None, typer.Option(
    "--output", "-o", dir_okay=False, help="Write the schema to FILE instead of stdout.")]
PolicyOpt = Annotated[str | None, typer.Option(
    "--policy", help="Only this policy's config schema.")]
# How every schema this command writes begins: a rerun may replace such a file (a schema
# committed for editors); any other needs --force.
SCHEMA_OURS = starts_with(f'{{\n  "$schema": "{SCHEMA_DIALECT}"'.encode())


def schema(
    ctx: typer.Context,
    output_file: OutputOpt = None,
    policy: PolicyOpt = None,
    force: ForceOpt = False,
) -> None:
    """JSON Schema of the registered policies' configs (for editors and check-jsonschema)."""
    mark_json(ctx.obj, output_file is None)
    out = check_output(output_file, "--output", "schema file", SCHEMA_OURS, force=force)
    text = output.to_json(registry.json_schema(policy)) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text)
    output.note(f"wrote {out.path}")
