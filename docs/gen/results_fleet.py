"""The results page's fleet section: the results sweep's fleet cells (docs/fleet.md).

A fleet cell of docs/results/sweep.toml replays a trace through N replicas
behind a router (``replicas`` and ``router`` set in its row). The section has
one table per workload: policy, router, replicas, p99 TTFT, hit rate, SLO
attainment, requests per replica (max over mean) and GPU-hours, in the grid's
order; and one line per policy saying, from those rows, the fewest of the
swept replica counts each router needs to hold the cells' TTFT SLO at p99, and
what the best router saves. Nothing here is a figure typed in: change the
rows and the sentences change with them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from radix_evict.sim.sweep.schema import is_fleet

Row = dict[str, Any]
FLEET_PAGE = "fleet.md"  # the fleet page, relative to docs/results.md


def fleet_rows(rows: Sequence[Row]) -> list[Row]:
    """The fleet cells that ran, in the rows' (the grid's) order."""
    return [r for r in rows if is_fleet(r) and r["status"] == "ok"]


def _timing(row: Row) -> dict[str, Any]:
    """The cell's timing point as its key states it (time scale, SLOs)."""
    return dict(json.loads(row["cell"]).get("timing") or {})


def _seconds(ms: float) -> str:
    return f"{ms / 1000:g} s"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def fleet_table(rows: Sequence[Row], slo_ms: float | None) -> list[str]:
    """One workload's fleet rows, a line each; bold: p99 TTFT within the SLO."""
    slo = f" (p99 TTFT <= {_seconds(slo_ms)}?)" if slo_ms is not None else ""
    lines = ["| policy | router | replicas | p99 TTFT ms | hit rate | "
             f"SLO attainment (TTFT <= {_seconds(slo_ms) if slo_ms else '-'}) | "
             f"requests max/mean | GPU-hours | meets{slo} |",
             "|---|---|--:|--:|--:|--:|--:|--:|:-:|"]
    for r in rows:
        met = slo_ms is not None and r["ttft_p99_ms"] <= slo_ms
        p99 = _ms(r["ttft_p99_ms"])
        lines.append(f"| {r['policy']} | {r['router']} | {r['replicas']} | "
                     f"{f'**{p99}**' if met else p99} | {_pct(r['hit_rate'])} | "
                     f"{_pct(r.get('slo_attainment'))} | {_ratio(r.get('balance_requests'))} | "
                     f"{r['gpu_hours']:.2f} | {'yes' if met else 'no' if slo_ms else '-'} |")
    return lines


def fewest(rows: Sequence[Row], policy: str, router: str, slo_ms: float) -> int | None:
    """The fewest replicas among ``rows`` at which ``policy`` behind ``router`` has p99 <= SLO."""
    counts = [r["replicas"] for r in rows if r["policy"] == policy and r["router"] == router
              and r["ttft_p99_ms"] <= slo_ms]
    return min(counts) if counts else None


def savings(rows: Sequence[Row], slo_ms: float) -> list[str]:
    """Per policy: the fewest swept replica counts each router needs, and what the best saves."""
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    routers = list(dict.fromkeys(r["router"] for r in rows))
    swept = sorted({r["replicas"] for r in rows})
    out = []
    for p in policies:
        need = {rt: fewest(rows, p, rt, slo_ms) for rt in routers}
        met = {rt: n for rt, n in need.items() if n is not None}
        parts = [f"{rt} {n}" if n is not None else f"{rt} more than {max(swept)}"
                 for rt, n in need.items()]
        text = (f"- {p}: fewest replicas of those swept ({', '.join(map(str, swept))}) for "
                f"p99 TTFT <= {_seconds(slo_ms)}: {', '.join(parts)}")
        if met:
            best = min(met, key=lambda rt: met[rt])
            others = [(rt, n) for rt, n in met.items() if n > met[best]]
            if others:
                rt, n = max(others, key=lambda x: x[1])
                saved = n - met[best]
                text += (f"; {best} saves {saved} of {n} replicas ({100 * saved / n:.0f}%) "
                         f"against {rt}")
            at = [r for r in rows if r["policy"] == p and r["replicas"] == met[best]]
            if len(at) > 1:
                text += (f"; at {met[best]} replicas, hit rate and busiest replica's "
                         f"requests over the mean: "
                         + ", ".join(f"{r['router']} {_pct(r['hit_rate'])} and "
                                     f"{_ratio(r.get('balance_requests'))}" for r in at))
        out.append(text + ".")
    return out


def section(rows: Sequence[Row], title: Any, pool_label: Any) -> list[str]:
    """The fleet section (empty without fleet rows).

    ``title(workload)`` names a workload, ``pool_label(tokens, page_size)`` a
    pool, as the page's other tables do. Each table lists a policy's cells,
    router by router, by replica count.
    """
    fleet = fleet_rows(rows)
    policies = list(dict.fromkeys(r["policy"] for r in fleet))
    routers = list(dict.fromkeys(r["router"] for r in fleet))
    fleet.sort(key=lambda r: (policies.index(r["policy"]), routers.index(r["router"]),
                              r["replicas"]))
    if not fleet:
        return []
    out = ["## Fleet", "",
           f"The fleet cells: each a timed replay of a workload through N "
           f"replicas behind a router, every replica with the pool and policy of the cell "
           f"([Fleet and capacity]({FLEET_PAGE}), where `radix-evict plan` searches the "
           f"replica count for an SLO). Hit rate and TTFT are over every request of the "
           f"fleet; *requests max/mean* is the busiest replica's request count over the "
           f"mean (1.00: even); GPU-hours are replicas x the replay's makespan. **Bold**: "
           f"p99 TTFT within the cells' TTFT SLO.", ""]
    groups: dict[tuple[str, float, float | None], list[Row]] = {}
    for r in fleet:  # a workload at one time scale and SLO: one table
        timing = _timing(r)
        key = (r["workload"], timing.get("time_scale") or 1.0, timing.get("slo_ttft_ms"))
        groups.setdefault(key, []).append(r)
    for (name, scale, slo_ms), mine in groups.items():
        page = mine[0]["page_size"]
        pools = sorted({r["pool_tokens"] for r in mine})
        rate = ("at its recorded rate" if scale == 1.0
                else f"with its timestamps stretched {scale:g}x")
        params = mine[0].get("params") or {}
        subset = (" (" + ", ".join(f"{k} = {v}" for k, v in params.items()) + ")"
                  if params else "")
        out += [f"### {title(name)}: fleet", "",
                f"{mine[0]['requests']:,} requests{subset} {rate}; page size {page}, "
                + " or ".join(f"{pool_label(p, page)} ({p:,})" for p in pools)
                + f" tokens per replica; cost model `{mine[0]['cost_model']}`"
                + (f"; TTFT SLO {_seconds(slo_ms)}." if slo_ms is not None else "."), "",
                *fleet_table(mine, slo_ms), ""]
        if slo_ms is not None:
            out += ["What the router saves, from these rows:", "", *savings(mine, slo_ms), ""]
    return out
