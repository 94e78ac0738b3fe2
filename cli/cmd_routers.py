"""``radix-evict routers``: the fleet routers ``--router`` accepts (core's
:func:`radix_evict.sim.fleet.registry.listing`; rendered here)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from radix_evict.sim.fleet.registry import listing

from . import output
from .errors import mark_json


def list_routers(ctx: typer.Context, json_out: Annotated[bool, typer.Option(
        "--json", help="Print JSON on stdout.")] = False) -> None:
    """List the routers simulate --replicas and plan accept: name, summary, config, source."""
    mark_json(ctx.obj, json_out)
    listed = listing()
    if json_out:
        output.emit_json(listed)
        return
    table = Table(title="radix-evict routers", title_justify="left")
    for col in ("router", "summary", "config (default)", "from"):
        table.add_column(col, overflow="fold")
    for r in listed["routers"]:
        cfg = ", ".join(f"{k}={v}" for k, v in r["config"].items()) or "-"
        table.add_row(r["name"], r["summary"], cfg, r["from"])
    output.stdout().print(table)
    for f in listed["failures"]:
        output.note(f"warning: {f['distribution']} (entry point {f['entry_point']!r}) failed "
                    f"to load ({f['phase']}): {f['error']}")
    for c in listed["conflicts"]:
        output.note(f"warning: {c}")
