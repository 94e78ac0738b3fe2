"""The capacity plan as a table (text; the command line renders it): one row per setting.

A setting that met the SLO shows its count and the figures of that probe;
one that did not shows ``> MAX`` and the figures of the best probe reached.
The host column appears when a setting has a host tier.
"""

from __future__ import annotations

from radix_evict.sim.fleet.plan import CapacityPlan, ms_text
from radix_evict.sim.tables import TextTable

__all__ = ["plan_table"]


def plan_table(plan: CapacityPlan) -> TextTable:
    """Replicas, TTFT percentile, p99 TTFT, hit rate, GPU-hours and probes per setting."""
    p = f"p{plan.percentile}"
    hosts = any(sp.setting.host is not None for sp in plan.settings)
    t = TextTable(f"capacity plan: fewest replicas for {plan.slo_text}",
                  caption="GPU-hours: replicas x the replay's makespan; figures at the count "
                          "(or, past the maximum, at the best probe)")
    for name in ("policy", "router", *(["host"] if hosts else [])):
        t.add_column(name, overflow="fold")
    figures = ["replicas", f"{p} TTFT", *([] if p == "p99" else ["p99 TTFT"]), "hit rate",
               "GPU-hours", "probes"]
    for name in figures:
        t.add_column(name, "right")
    for sp in plan.settings:
        s, shown = sp.setting, sp.shown
        cells = [s.run.name, s.router_label, *([s.host_label] if hosts else [])]
        cells.append(str(sp.replicas) if sp.replicas is not None else f"> {plan.max_replicas}")
        if shown is None:
            cells += ["-"] * (len(figures) - 2)
        else:
            cells.append(ms_text(shown.ttft_ms))
            if p != "p99":
                cells.append(ms_text(shown.ttft_p99_ms))
            cells += [f"{shown.hit_rate:.1%}", f"{shown.gpu_hours:,.2f}"]
        cells.append(str(len(sp.probes)))
        t.add_row(*cells)
    return t
