"""``simulate``'s tables, rendered: the text core's :mod:`radix_evict.sim.tables` assembles (per
policy, token, timed and two-tier; policy x workload; per priority tier; the engine's; the pool
curve's) as rich tables, and the list of workloads."""

from __future__ import annotations

from rich.table import Table

from radix_evict.sim import tables
from radix_evict.sim.fleet import tables as fleet_tables
from radix_evict.sim.tables import TextTable
from radix_evict.sim.workloads import workload_names

from . import output


def render(text: TextTable) -> Table:
    """A rich table of ``text`` (core's :mod:`radix_evict.sim.tables` assembles it)."""
    t = Table(title=text.title, title_justify="left")
    for c in text.columns:
        t.add_column(c.name, justify=c.justify, overflow="fold" if c.fold else "ellipsis")
    for i, row in enumerate(text.rows):
        t.add_row(*row, end_section=i in text.section_ends)
    if text.caption is not None:
        t.caption = text.caption
    return t


_rendered = output.rendered_by(render)


policy_table = _rendered(tables.policy_table)
timed_table = _rendered(tables.timed_table)
host_table = _rendered(tables.host_table)
tier_table = _rendered(tables.tier_table)
matrix_table = _rendered(tables.matrix_table)
hit_rate_pivot = _rendered(tables.hit_rate_pivot)
engine_table = _rendered(tables.engine_table)
curve_table = _rendered(tables.curve_table)
fleet_table = _rendered(fleet_tables.fleet_table)
replica_table = _rendered(fleet_tables.replica_table)


def list_workloads_table(json_out: bool) -> None:
    """The built-in workloads with their summaries and parameters."""
    from radix_evict.sim.workloads import WORKLOADS

    specs = [WORKLOADS[n].describe() for n in workload_names()]
    if json_out:
        output.emit_json({"workloads": specs})
        return
    from rich.table import Table

    t = Table(title="workloads (simulate --workload NAME --param KEY=VALUE)",
              title_justify="left")
    for col in ("workload", "summary", "parameters (default)"):
        t.add_column(col, overflow="fold")
    for s in specs:
        ps = ", ".join(f"{p['name']}={p['default']}" for p in s["params"])
        t.add_row(s["name"], s["summary"], ps)
    output.stdout().print(t)
