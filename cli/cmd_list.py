"""``radix-evict list``: the policies a user can pick, and with --all everything else loaded
(core's :func:`radix_evict.policies.catalog.listing`; rendered here)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from radix_evict import registry
from radix_evict.policies.catalog import listing

from . import output
from .errors import mark_json

AllOpt = Annotated[bool, typer.Option(
    "--all", help="Also show hidden policies (marked) and plugins that failed to load.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def list_policies(
    ctx: typer.Context,
    show_all: AllOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """List the policies --policy accepts: name, summary, config keys, source distribution."""
    mark_json(ctx.obj, json_out)
    listed = listing(registry, show_all)
    rows, failures, notes = listed.rows, listed.failures, listed.notes
    if json_out:
        output.emit_json(listed.to_dict())
        for line in notes:
            output.note(f"note: {line}")
        return
    table = Table(title="radix-evict policies", title_justify="left")
    for col in ("policy", "summary", "config keys", "from"):
        table.add_column(col, overflow="fold")
    for r in rows:
        name = r["name"] + (" (hidden)" if not r["choice"] else "")
        dist = f"{r['distribution']} {r['version'] or ''}".strip()
        table.add_row(name, r["summary"], ", ".join(r["config_keys"]) or "-", dist)
    output.stdout().print(table)
    if show_all and failures:
        ft = Table(title="plugins that failed to load", title_justify="left")
        for col in ("plugin", "phase", "error"):
            ft.add_column(col, overflow="fold")
        for f in failures:
            ft.add_row(f.label, f.phase, f.error)
        output.stdout().print(ft)
    for c in listed.conflicts:
        output.note(f"warning: {c}")
    for line in notes:
        output.note(f"note: {line}")
    if listed.failed_left_out:
        output.note("list --all shows the plugins that failed to load")
    if listed.hidden_left_out:
        output.note("hidden policies are not shown; use --all to see them")
