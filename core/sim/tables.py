"""The data behind ``simulate``'s tables, as text: per policy (token, timed, two-tier), policy x
workload, the hit-rate pivot, per priority tier, the engine's, and the pool curve's.

Each builder returns a :class:`TextTable` (title, columns with their alignment,
rows of cells, section ends, caption); the command line renders it
(``cli/simulate_report.py``). The references (``--oracle``) are named as
:mod:`radix_evict.sim.bound` names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from radix_evict.sim.bound import Bound
from radix_evict.sim.configs import DERIVED
from radix_evict.sim.pool_curve_runs import CurveRun
from radix_evict.sim.results import ReplayResult

Justify = Literal["left", "right"]


@dataclass
class Column:
    """A column's name, alignment (``left``/``right``) and whether long cells fold."""

    name: str
    justify: Justify = "left"
    fold: bool = False


@dataclass
class TextTable:
    """A table as text: title, columns, rows of cells, the rows that end a section, caption."""

    title: str
    columns: list[Column] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    section_ends: set[int] = field(default_factory=set)
    caption: str | None = None

    def add_column(self, name: str, justify: Justify = "left",
                   overflow: str | None = None) -> None:
        self.columns.append(Column(name, justify, overflow == "fold"))

    def add_row(self, *cells: str, end_section: bool = False) -> None:
        if end_section:
            self.section_ends.add(len(self.rows))
        self.rows.append(list(cells))


def _pct(x: float) -> str:
    """A rate as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def _num(x: float) -> str:
    """A token count with thousands separators (percentiles may be fractional)."""
    return f"{x:,.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 100 else f"{x:,.1f}"


def _config_text(r: ReplayResult) -> str:
    if not r.policy_config:
        return "-"
    text = ", ".join(f"{k}={v}" for k, v in r.policy_config.items())
    return f"{text} (derived)" if r.config_source == DERIVED else text


def _gap_text(bound: Bound, hit_rate: float) -> str:
    share = bound.gap_closed(hit_rate)
    return "-" if share is None else f"{100 * share:.0f}%"


def beaten_note(bound: Bound, results: Sequence[ReplayResult]) -> str:
    """Said where a policy's hit rate passes the oracle's: the row is then no bound here."""
    beaten = bound.beaten_by(results)
    if not beaten:
        return ""
    return (f"; {', '.join(beaten)} beat{'s' if len(beaten) == 1 else ''} the oracle's hit rate "
            f"on {bound.workload}: it is no bound there")


def bound_caption(bound: Bound, results: Sequence[ReplayResult] = ()) -> str:
    """What the oracle row and the ceiling mean, with the ceiling's figure."""
    gap = ("gap closed = share of the lru-to-oracle hit-rate gap" if bound.is_bound else
           "no gap is measured against it")
    return (f"oracle = {bound.oracle_is}; infinite-pool ceiling {_pct(bound.ceiling.hit_rate)}; "
            f"{gap}{beaten_note(bound, results)}")


def policy_table(results: Sequence[ReplayResult], winner: str, title: str,
                 bound: Bound | None = None) -> TextTable:
    """One row per policy: hit rate, uncached tails, evictions, replay speed (and the bound)."""
    t = TextTable(title)
    t.add_column("policy")
    t.add_column("config", overflow="fold")
    cols = ["hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
            "req/s", "wall s"]
    if bound is not None:
        cols.insert(1, "gap closed")
    for col in cols:
        t.add_column(col, justify="right")
    rows = [*results, bound.oracle] if bound is not None else list(results)
    for r in rows:
        mark = " *" if r.label == winner else ""
        gap = [] if bound is None else [_gap_text(bound, r.hit_rate)]
        t.add_row(r.label + mark, _config_text(r), _pct(r.hit_rate), *gap, _num(r.p50_uncached),
                  _num(r.p90_uncached), _num(r.p99_uncached), f"{r.evicted_tokens:,}",
                  f"{r.req_per_s:,.0f}", f"{r.wall_s:.2f}",
                  end_section=bound is not None and r is results[-1])
    t.caption = "* recommended; uncached = prompt tokens per request not served from the cache"
    if bound is not None:
        t.caption += "\n" + bound_caption(bound, results)
    return t


def tier_table(results: Sequence[ReplayResult], title: str) -> TextTable:
    """Hit rate per request priority (the priority-tiers question: whose prefixes stay)."""
    tiers = sorted({p for r in results for p in r.tiers})
    t = TextTable(title)
    t.add_column("policy")
    for p in tiers:
        t.add_column(f"priority {p}", justify="right")
    for r in results:
        rates = r.tier_hit_rates
        t.add_row(r.label, *(_pct(rates[p]) if p in rates else "-" for p in tiers))
    return t


def matrix_table(workloads: Sequence[str], policies: Sequence[str],
                 results: Sequence[ReplayResult], winners: dict[str, str],
                 bounds: dict[str, Bound] | None = None) -> TextTable:
    """Policy x workload: hit rate and p50/p90/p99 uncached, winner marked per workload."""
    cell = {(r.workload, r.label): r for r in results}
    bounds = bounds or {}
    for w, bound in bounds.items():
        cell[(w, bound.oracle.label)] = bound.oracle
    t = TextTable("policy x workload")
    t.add_column("workload")
    t.add_column("policy")
    cols = ["hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens"]
    if bounds:
        cols.insert(1, "gap closed")
    for col in cols:
        t.add_column(col, justify="right")
    for w in workloads:
        b = bounds.get(w)
        labels = [*policies, b.oracle.label] if b is not None else list(policies)
        for i, p in enumerate(labels):
            r = cell[(w, p)]
            mark = " *" if winners.get(w) == p else ""
            gap = [] if b is None else [_gap_text(b, r.hit_rate)]
            t.add_row(w if i == 0 else "", p + mark, _pct(r.hit_rate), *gap, _num(r.p50_uncached),
                      _num(r.p90_uncached), _num(r.p99_uncached), f"{r.evicted_tokens:,}",
                      end_section=i == len(labels) - 1)
    t.caption = "* winner of the workload"
    if bounds:
        first = next(iter(bounds.values()))
        gap_is = ("gap closed = share of the lru-to-oracle hit-rate gap" if first.is_bound else
                  "no gap is measured against it")
        t.caption += (f"\noracle = {first.oracle_is}; {gap_is}; ceilings in the hit-rate table"
                      + "".join(beaten_note(b, results) for b in bounds.values()))
    return t


def hit_rate_pivot(workloads: Sequence[str], policies: Sequence[str],
                   results: Sequence[ReplayResult], winners: dict[str, str],
                   bounds: dict[str, Bound] | None = None) -> TextTable:
    """Hit rates at a glance: policies down, workloads across, winner per column."""
    cell = {(r.workload, r.label): r for r in results}
    t = TextTable("hit rate")
    t.add_column("policy")
    for w in workloads:
        t.add_column(w, justify="right")
    for i, p in enumerate(policies):
        t.add_row(p, *(_pct(cell[(w, p)].hit_rate) + (" *" if winners.get(w) == p else "")
                       for w in workloads), end_section=bool(bounds) and i == len(policies) - 1)
    if bounds:
        timed = not next(iter(bounds.values())).is_bound
        t.add_row("oracle (Belady-guided, not a bound)" if timed else "oracle",
                  *(_pct(bounds[w].oracle.hit_rate) for w in workloads))
        t.add_row("ceiling (infinite pool)", *(_pct(bounds[w].ceiling.hit_rate)
                                               for w in workloads))
    return t


def engine_table(rows: Sequence[dict[str, Any]], winner: str | None, title: str) -> TextTable:
    """Measured TTFT next to the token figures of the same replay."""
    t = TextTable(title)
    t.add_column("policy")
    for col in ("hit rate", "p50 uncached", "p90 uncached", "p99 uncached", "evicted tokens",
                "TTFT p50 ms", "TTFT p90 ms", "TTFT p99 ms", "cache ms/req", "wall s"):
        t.add_column(col, justify="right")
    for r in rows:
        mark = " *" if r["label"] == winner else ""
        t.add_row(r["label"] + mark, _pct(r["hit_rate"]), _num(r["p50_uncached"]),
                  _num(r["p90_uncached"]), _num(r["p99_uncached"]), f"{r['evicted_tokens']:,}",
                  f"{r['ttft_ms_p50']:.1f}", f"{r['ttft_ms_p90']:.1f}",
                  f"{r['ttft_ms_p99']:.1f}", f"{r['cache_ms_per_request']:.2f}",
                  f"{r['wall_seconds']:.2f}")
    t.caption = ("* recommended (token rule); TTFT from admission to first token, measured; "
                 "cache ms/req: the cache's own calls (lookup, locks, evict, insert)")
    return t

def _ms(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def timed_table(results: Sequence[ReplayResult], winner: str, title: str,
                bound: Bound | None = None) -> TextTable:
    """One row per policy: hit rate and the latencies a user feels, under load."""
    t = TextTable(title)
    t.add_column("policy")
    slo = any(r.timing.slo_attainment is not None for r in results)
    cols = ["hit rate", "TTFT p50", "TTFT p90", "TTFT p99", "queue p99", "TPOT p50",
            "e2e p99", "req/s served", "retracted", "peak queue"]
    if slo:
        cols[7:7] = ["SLO met", "goodput"]
    for col in cols:
        t.add_column(col, justify="right")
    rows = [*results, bound.oracle] if bound is not None and bound.oracle.timing else list(results)
    for r in rows:
        f = r.timing
        mark = " *" if r.label == winner else ""
        cells = [_pct(r.hit_rate), _ms(f.ttft_ms.p50), _ms(f.ttft_ms.p90), _ms(f.ttft_ms.p99),
                 _ms(f.queue_ms.p99), "-" if f.tpot_ms is None else _ms(f.tpot_ms.p50),
                 _ms(f.e2e_ms.p99),
                 f"{f.throughput_rps:,.2f}", f"{f.retractions:,}", f"{f.peak_queue:,}"]
        if slo:
            cells[7:7] = [_pct(f.slo_attainment or 0.0), f"{f.goodput_rps or 0.0:,.2f}"]
        name = r.label + mark
        if bound is not None and r is bound.oracle:
            name = f"{r.label} (Belady-guided)"
        t.add_row(name, *cells, end_section=r is results[-1] and len(rows) > len(results))
    first = results[0].timing
    t.caption = (f"* recommended; times in ms of virtual time, cost model {first.cost_model}; "
                 "TTFT = arrival to first token (queueing + prefill)")
    if any(r.timing.refused for r in results):
        t.caption += "; refused requests (too large for the pool) count as SLO misses"
    if bound is not None and bound.oracle.timing:
        t.caption += "\n" + timed_oracle_caption(bound, results)
    return t

def timed_oracle_caption(bound: Bound, results: Sequence[ReplayResult]) -> str:
    """What the timed oracle row is, and who beats it here (on hit rate or p99 TTFT)."""
    o = bound.oracle.timing
    assert o is not None
    hits = bound.beaten_by(results)
    ttft = [r.label for r in results if r.timing.ttft_ms.p99 < o.ttft_ms.p99]
    beaten = [f"{', '.join(who)} on {what}" for who, what in ((hits, "hit rate"),
                                                              (ttft, "p99 TTFT")) if who]
    return f"oracle = {bound.oracle_is}" + (f"; beaten here by {'; '.join(beaten)}"
                                             if beaten else "")

HOST_REFERENCE = "oracle + ceiling"


def host_table(results: Sequence[ReplayResult], title: str,
               bound: Bound | None = None) -> TextTable:
    """Where each policy's prompt tokens came from, and what moved between the tiers."""
    t = TextTable(title)
    t.add_column("policy")
    t.add_column("host policy")
    admission = any(r.host is not None and r.host.admission != "none" for r in results)
    if admission:
        t.add_column("admission")
    timed = any(r.timing is not None for r in results)
    cols = ["device hit", "host hit", "miss", "written to host", "loaded back", "PCIe GB",
            "host evicted", "host evictions", "reclaimed"]
    if timed:
        cols.append("copy wait s")
    for col in cols:
        t.add_column(col, justify="right")
    for r in results:
        h = r.host
        assert h is not None
        cells = [_pct(h.device_hit_rate), _pct(h.host_hit_rate), _pct(h.miss_rate),
                 f"{h.written_tokens:,}", f"{h.loaded_tokens:,}",
                 "-" if h.pcie_bytes is None else f"{h.pcie_bytes / 1e9:,.1f}",
                 f"{h.host_evicted_tokens:,}",
                 f"{h.host_evictions:,}", f"{h.reclaimed_tokens:,}"]
        if timed:
            cells.append(f"{h.copy_wait_s:,.2f}")
        t.add_row(r.label, h.host_policy, *([h.admission] if admission else []), *cells)
    h0 = results[0].host
    assert h0 is not None
    backup = (f"backed up at insert {h0.write_threshold}" if h0.write_threshold
              else "backed up on device eviction")
    t.caption = (f"host tier {h0.host_tokens:,} tokens, {h0.write_policy} ({backup}); hit = "
                 "prompt tokens found on device / loaded back from host")
    if admission:
        t.caption += ("; admission = what may be written (none: every backup the write "
                      "policy makes)")
    if h0.pcie_cost_model is not None:
        t.caption += (f"; PCIe GB = tokens written and loaded back, at {h0.pcie_cost_model}'s "
                      "KV bytes a token")
    if timed:
        t.caption += ("; copy wait = virtual time steps spent on load-backs past their "
                      "prefill's compute, and on write_back's writes")
    if bound is not None:
        o, c = bound.oracle.hit_rate, bound.ceiling.hit_rate
        t.add_row(HOST_REFERENCE, "", *([""] if admission else []), _pct(o),
                  _pct(max(0.0, c - o)), _pct(1 - c),
                  *[""] * (len(cols) - 3), end_section=True)
        above = [r.label for r in results
                 if r.host is not None and r.host.device_hit_rate > o + 1e-12]
        t.caption += (f"\n{HOST_REFERENCE} = a reference, not a bound: device = the one-tier "
                      "oracle's hit rate (Belady on the device alone; a host tier's load-backs "
                      "change what the device holds, so a policy pair can serve more from it), "
                      "host = the rest of the infinite-pool ceiling, miss = what the ceiling "
                      "misses (every prefix seen before counts as a hit)"
                      + (f"; {', '.join(above)} serve{'s' if len(above) == 1 else ''} more "
                         "from the device here" if above else ""))
    return t

def curve_table(run: CurveRun, title: str) -> TextTable:
    """One row per pool size: hit rate, uncached tails, evictions, where it came from."""
    t = TextTable(title)
    cols = ["pool tokens", "hit rate", "p50 uncached", "p90 uncached", "p99 uncached",
            "evicted tokens", "failed"]
    if run.oracle is not None:
        cols += ["oracle", "ceiling"]
    for col in cols:
        t.add_column(col, justify="right")
    t.add_column("via")
    for i, p in enumerate(run.curve.points):
        refs = [] if run.oracle is None else [_pct(run.oracle[i].hit_rate),
                                              _pct(run.ceiling or 0.0)]
        t.add_row(f"{p.pool_tokens:,}", _pct(p.hit_rate), _num(p.p50_uncached),
                  _num(p.p90_uncached), _num(p.p99_uncached), f"{p.evicted_tokens:,}",
                  f"{p.failed:,}", *refs, p.source)
    t.caption = ("uncached = prompt tokens per request not served from the cache; via: curve = "
                 "the one lru pass, replay = that size's own replay (the pass stood aside)")
    if run.oracle is not None:
        t.caption += ("\noracle = Belady's offline bound, one replay per size; ceiling = "
                      "the infinite pool (every reuse hits)")
    return t
