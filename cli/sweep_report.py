"""``sweep``'s tables, rendered: the text core's :mod:`radix_evict.sim.sweep.tables` assembles
(the cells, the best config per policy, the curves over pool and host sizes) as rich tables."""

from __future__ import annotations

from rich.table import Table

from radix_evict.sim.sweep import tables
from radix_evict.sim.sweep.tables import LEFT, TextTable, cell_workload

from . import output

__all__ = ["best_table", "cell_workload", "curve_table", "host_curve_table", "render",
           "rows_table"]


def render(text: TextTable) -> Table:
    """A rich table of ``text``: text columns left-aligned, figures right, long cells folded."""
    t = Table(title=text.title, title_justify="left", caption=text.caption,
              min_width=text.min_width)
    for c in text.columns:
        t.add_column(c, overflow="fold", justify="left" if c in LEFT else "right")
    for row in text.rows:
        t.add_row(*row)
    return t


_rendered = output.rendered_by(render)


rows_table = _rendered(tables.rows_table)
best_table = _rendered(tables.best_table)
curve_table = _rendered(tables.curve_table)
host_curve_table = _rendered(tables.host_curve_table)
