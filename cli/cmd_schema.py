"""``radix-evict schema``: one JSON Schema for every registered policy's config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from radix_evict import registry

from . import output
from .errors import mark_json

OutputOpt = Annotated[Path | None, typer.Option(
    "--output", "-o", dir_okay=False, help="Write the schema to FILE instead of stdout.")]
PolicyOpt = Annotated[str | None, typer.Option(
    "--policy", help="Only this policy's config schema.")]


def schema(
    ctx: typer.Context,
    output_file: OutputOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """JSON Schema of the registered policies' configs (for editors and check-jsonschema)."""
    mark_json(ctx.obj, output_file is None)
    text = output.to_json(registry.json_schema(policy)) + "\n"
    if output_file is None:
        typer.echo(text, nl=False)
        return
    output_file.write_text(text, encoding="utf-8")
    output.note(f"wrote {output_file}")
