"""``radix-evict list``: the policies a user can pick, and with --all everything else loaded."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from radix_evict import registry
from radix_evict.policies.spec import PolicySpec

from . import output
from .errors import mark_json


def policy_row(spec: PolicySpec, choices: list[str]) -> dict[str, Any]:
    """One policy as ``list --json`` shows it."""
    return {
        "name": spec.name,
        "summary": spec.summary,
        "config_keys": list(spec.keys),
        "hidden": spec.hidden,
        "choice": spec.name in choices,
        "distribution": spec.distribution,
        "version": spec.version,
        "entry_point": spec.entry_point,
    }


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
    choices = registry.choices()
    specs = [s for s in registry.specs() if show_all or s.name in choices]
    order = {n: i for i, n in enumerate(registry.choices(extended=True))}
    specs.sort(key=lambda s: order.get(s.name, len(order)))
    rows = [policy_row(s, choices) for s in specs]
    failures = registry.failures if show_all else []
    conflicts = registry.conflicts if show_all else []
    # Without --all a failed plugin is still mentioned (one line each, on stderr).
    notes = registry.notes(failures=not show_all)
    if json_out:
        data: dict[str, Any] = {"policies": rows}
        if show_all:
            data["failures"] = [f.to_dict() for f in failures]
            data["conflicts"] = [c.to_dict() for c in conflicts]
            data["notes"] = notes
        output.emit_json(data)
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
    for c in conflicts:
        output.note(f"warning: {c}")
    for line in notes:
        output.note(f"note: {line}")
    if not show_all and registry.failures:
        output.note("list --all shows the plugins that failed to load")
    if not show_all and len(rows) < len(registry.specs()):
        output.note("hidden policies are not shown; use --all to see them")
