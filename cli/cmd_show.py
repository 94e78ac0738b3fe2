"""``radix-evict show POLICY``: what a policy does and every config key it takes."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from radix_evict import registry
from radix_evict.policies.catalog import describe

from . import output
from .errors import mark_json


def show_policy(
    ctx: typer.Context,
    policy: Annotated[str, typer.Argument(help="Policy name (see `radix-evict list --all`).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Show a policy: summary, each config key (type, default, constraint, meaning), JSON Schema."""
    mark_json(ctx.obj, json_out)
    info = describe(registry, policy)
    if json_out:
        output.emit_json(info)
        return
    out = output.stdout()
    hidden = " (hidden: not a --policy choice until a package extends the list)"
    out.print(f"[bold]{info['name']}[/bold]{hidden if not info['choice'] else ''}",
              highlight=False)
    out.print(info["summary"], highlight=False, markup=False)
    out.print(f"from {info['distribution']} {info['version'] or ''} "
              f"(entry point {info['entry_point']!r})", highlight=False, markup=False)
    keys = info["config_keys"]
    if keys:
        table = Table(title="config keys", title_justify="left")
        for col in ("key", "type", "default", "constraint", "meaning"):
            table.add_column(col, overflow="fold")
        for k in keys:
            default = "(required)" if k["required"] else output.to_json(k["default"])
            table.add_row(k["key"], k["type"], default, k["constraint"] or "-", k["description"])
        out.print(table)
    else:
        out.print("config keys: none (any key is an error)", highlight=False)
    out.print("JSON Schema:", highlight=False)
    out.print(output.to_json(info["schema"]), markup=False, highlight=False)
