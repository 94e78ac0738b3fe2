"""The value of client hints and of host-tier admission, measured (issue #40; docs/hints.md).

    python bench/bench_hints.py session      # session-end hints: gap closed, Mooncake traces
    python bench/bench_hints.py timed        # the same hints, p99 TTFT in the timed replay
    python bench/bench_hints.py agentic      # next-request hints: p99 TTFT, agentic under load
    python bench/bench_hints.py admission    # host writes saved against host hits lost
    python bench/bench_hints.py all --write-docs   # all three, tables written into docs/hints.md

No trace records hints: each hinted replay asks "what if clients sent this"
(:mod:`radix_evict.sim.hints`), for a share of sessions (coverage) with a
share of wrong hints (error). The hint-aware policies are the
``plugins_example/hints`` package's (put on the path here when it is not
installed). Every figure is one seeded replay (seed 0): rerunning prints the
same tables. The Mooncake traces are read in place from ../shared/traces.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins_example" / "hints" / "src"))

from radix_evict import load_policy  # noqa: E402
from radix_evict.cache.host_tier import HostTierSpec  # noqa: E402
from radix_evict.sim.bound import replay_oracle  # noqa: E402
from radix_evict.sim.hints import with_hints  # noqa: E402
from radix_evict.sim.replay import replay  # noqa: E402
from radix_evict.sim.results import ReplayResult  # noqa: E402
from radix_evict.sim.timed.options import build_timing  # noqa: E402
from radix_evict.sim.workloads import Workload, get_workload, load_trace  # noqa: E402

TRACES = ROOT.parent / "shared" / "traces"
TRACE_FILES = {"conversation": "mooncake_conversation_trace.jsonl",
               "synthetic": "mooncake_synthetic_trace.jsonl"}
PAGE = 512
POOLS = {"conversation": (2_000_000, 4_000_000, 8_000_000),
         "synthetic": (1_000_000, 4_000_000, 8_000_000)}  # the results page's
GOAL_POOL = 4_000_000
COVERAGES = (0.0, 0.25, 0.5, 1.0)
ERRORS = (0.0, 0.1)
# The agentic workload under load: twice the default session rate (new sessions a second),
# agents' tools running 10 s on average (default 3 s), the default pool (25% of all
# sessions' final history tokens). Figures are means over three seeds of the workload.
AGENTIC = {"session_rate": 1.0, "tool_gap_mean": 10.0}
AGENTIC_SEEDS = (0, 1, 2)
DOCS = ROOT / "docs" / "hints.md"


@dataclass
class Cell:
    """One replay's figures, as the tables show them."""

    workload: str
    pool: int
    policy: str
    hint: str
    coverage: float | None
    error: float | None
    hit_rate: float
    gap_closed: float | None = None
    p99_ttft_ms: float | None = None
    extra: dict[str, Any] | None = None


def _hint(kind: str, coverage: float, error: float) -> str:
    return f"{kind}:coverage={coverage:g},error={error:g}"


def _grid() -> list[tuple[float, float]]:
    """(coverage, error) pairs; coverage 0 once (nothing is sent, so nothing is wrong)."""
    return [(c, e) for c in COVERAGES for e in ERRORS if c > 0 or e == 0]


def _gap(hit: float, lru: float, oracle: float) -> float | None:
    return (hit - lru) / (oracle - lru) if oracle > lru else None


def session_cells(name: str, w: Workload, pools: Iterable[int | None], page: int,
                  policies: Iterable[str], log: Callable[[str], None]) -> list[Cell]:
    """lru, the oracle, and each hint-aware policy over the coverage x error grid."""
    out: list[Cell] = []
    for pool in pools:
        lru = replay(w, "lru", pool_tokens=pool, page_size=page, timeline_points=0)
        ora = replay_oracle(w, pool_tokens=pool, page_size=page, timeline_points=0)
        size = lru.pool_tokens
        out.append(Cell(name, size, "lru", "-", None, None, lru.hit_rate, 0.0))
        out.append(Cell(name, size, "oracle", "-", None, None, ora.hit_rate, 1.0))
        for policy in policies:
            for cov, err in _grid():
                hw = with_hints(w, _hint("session-end", cov, err))
                p = load_policy(policy)
                r = replay(hw, p, pool_tokens=pool, page_size=page, timeline_points=0)
                trust = getattr(p, "trust", None)
                extra = {"trust": round(getattr(trust, "value", trust), 3)} if trust else None
                out.append(Cell(name, size, policy, "session-end", cov, err, r.hit_rate,
                                _gap(r.hit_rate, lru.hit_rate, ora.hit_rate), extra=extra))
                log(f"{name} pool {size:,} {policy} coverage {cov:g} error {err:g}: "
                    f"{r.hit_rate:.4f} (lru {lru.hit_rate:.4f}, oracle {ora.hit_rate:.4f})")
    return out


def run_session(goal_only: bool, log: Callable[[str], None]) -> list[Cell]:
    """Session-end hints on both Mooncake traces (every results-page pool) and on chat."""
    cells: list[Cell] = []
    for key, fname in TRACE_FILES.items():
        w = load_trace(TRACES / fname)
        pools = (GOAL_POOL,) if goal_only else POOLS[key]
        cells += session_cells(key, w, pools, PAGE, ("session",), log)
        # learned with hint features: the goal's pool only (a replay takes ~15 s here)
        cells += [c for c in session_cells(key, w, (GOAL_POOL,), PAGE, ("learned",), log)
                  if c.policy == "learned"]
    cells += session_cells("chat", get_workload("chat", seed=0), (None,), 1, ("session",), log)
    return cells


def _timed(w: Workload, policy: str, timing: Any) -> tuple[ReplayResult, Any]:
    p = load_policy(policy)
    return replay(w, p, timing=timing, timeline_points=0), p


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _agentic_cell(policy: str, kind: str, cov: float | None, err: float | None,
                  timing: Any) -> Cell:
    """Means over AGENTIC_SEEDS of one timed replay (a p99 of ~2,000 requests is noisy)."""
    p99s, hits, trusts = [], [], []
    pool = 0
    for seed in AGENTIC_SEEDS:
        w = get_workload("agentic", seed=seed, **AGENTIC)
        if policy == "oracle":
            r, p = replay_oracle(w, timing=timing, timeline_points=0), None
        else:
            if cov is not None and err is not None:
                w = with_hints(w, _hint(kind, cov, err))
            r, p = _timed(w, policy, timing)
        assert r.timing is not None
        p99s.append(r.timing.ttft_ms.p99)
        hits.append(r.hit_rate)
        trust = getattr(p, "trust", None)
        if trust is not None:
            trusts.append(float(getattr(trust, "value", trust)))
        pool = r.pool_tokens
    extra = {"trust": round(_mean(trusts), 2)} if trusts else None
    return Cell("agentic", pool, policy, kind, cov, err, _mean(hits), p99_ttft_ms=_mean(p99s),
                extra=extra)


def run_agentic(log: Callable[[str], None]) -> list[Cell]:
    """Next-request (tool return) and session-end hints on agentic, timed, under load."""
    timing = build_timing(timing=True, seed=0, objective="hit-rate")
    cells = [_agentic_cell("lru", "-", None, None, timing),
             _agentic_cell("oracle", "-", None, None, timing)]
    for kind, policy in (("next-request", "retain"), ("session-end", "session")):
        for cov, err in _grid():
            c = _agentic_cell(policy, kind, cov, err, timing)
            cells.append(c)
            log(f"agentic {policy} {kind} coverage {cov:g} error {err:g}: p99 TTFT "
                f"{c.p99_ttft_ms or 0:,.0f} ms (lru {cells[0].p99_ttft_ms or 0:,.0f}), "
                f"hit {c.hit_rate:.4f}")
    return cells


TIME_SCALE = 6.0  # the results page's: as recorded, the traces arrive faster than one GPU serves


def run_timed(log: Callable[[str], None]) -> list[Cell]:
    """Session-end hints on both Mooncake traces in the timed replay (pool 4M): p99 TTFT."""
    timing = build_timing(timing=True, seed=0, objective="hit-rate", time_scale=TIME_SCALE)
    cells: list[Cell] = []
    for key, fname in TRACE_FILES.items():
        w = load_trace(TRACES / fname)
        lru, _ = _timed_trace(w, "lru", timing)
        cells.append(Cell(key, lru.pool_tokens, "lru", "-", None, None, lru.hit_rate,
                          p99_ttft_ms=lru.timing.ttft_ms.p99 if lru.timing else None))
        for cov, err in _grid():
            r, p = _timed_trace(with_hints(w, _hint("session-end", cov, err)), "session", timing)
            p99 = r.timing.ttft_ms.p99 if r.timing else None
            cells.append(Cell(key, r.pool_tokens, "session", "session-end", cov, err, r.hit_rate,
                              p99_ttft_ms=p99, extra={"trust": round(p.trust.value, 3)}))
            log(f"timed {key} session coverage {cov:g} error {err:g}: p99 TTFT {p99 or 0:,.0f} ms "
                f"(lru {lru.timing.ttft_ms.p99 if lru.timing else 0:,.0f})")
    return cells


def _timed_trace(w: Workload, policy: str, timing: Any) -> tuple[ReplayResult, Any]:
    p = load_policy(policy)
    return replay(w, p, pool_tokens=GOAL_POOL, page_size=PAGE, timing=timing,
                  timeline_points=0), p


def timed_table(cells: list[Cell]) -> str:
    """p99 TTFT per coverage x error, each trace (lru for reference)."""
    lines = [f"Pool 4M, page 512, timestamps stretched {TIME_SCALE:g} times (as on the results "
             "page), default cost model.", "",
             "| trace | policy | coverage | error | p99 TTFT ms | vs lru | hit rate | trust |",
             "|---|---|--:|--:|--:|--:|--:|--:|"]
    for c in cells:
        lru = next(x for x in cells if x.workload == c.workload and x.policy == "lru")
        p99, base = c.p99_ttft_ms or 0.0, lru.p99_ttft_ms or 1.0
        cov = "-" if c.coverage is None else f"{c.coverage:g}"
        err = "-" if c.error is None else f"{c.error:g}"
        lines.append(f"| {c.workload} | {c.policy} | {cov} | {err} | {p99:,.0f} | "
                     f"{100 * (p99 - base) / base:+.1f}% | {_pct(c.hit_rate)} | "
                     f"{(c.extra or {}).get('trust', '-')} |")
    return "\n".join(lines)


ADMISSIONS: tuple[tuple[str, str, str | None], ...] = (
    ("write_through", "write_through", None),
    ("write_through + selective", "write_through", "selective"),
    ("write_through + tinylfu", "write_through", "tinylfu"),
    ("write_through_selective", "write_through_selective", None),
    ("write_through_selective + tinylfu", "write_through_selective", "tinylfu"),
    ("write_back", "write_back", None),
    ("write_back + tinylfu", "write_back", "tinylfu"),
)


def run_admission(log: Callable[[str], None]) -> list[Cell]:
    """Host writes and device-plus-host hits with a host tier at ratio 2 (conversation, 4M)."""
    w = load_trace(TRACES / TRACE_FILES["conversation"])
    cells: list[Cell] = []
    for label, write, admission in ADMISSIONS:
        host = HostTierSpec(ratio=2.0, write_policy=write, admission=admission)
        r = replay(w, "lru", pool_tokens=GOAL_POOL, page_size=PAGE, timeline_points=0, host=host)
        h = r.host
        assert h is not None
        extra = {"written_tokens": h.written_tokens, "loaded_tokens": h.loaded_tokens,
                 "device_hit": h.device_hit_rate, "host_hit": h.host_hit_rate,
                 "host_tokens": h.host_tokens, "pcie_bytes": h.pcie_bytes or 0,
                 "pcie_cost_model": h.pcie_cost_model}
        cells.append(Cell("conversation", r.pool_tokens, "lru", label, None, None, r.hit_rate,
                          extra=extra))
        log(f"admission {label}: written {h.written_tokens:,}, hit {r.hit_rate:.4f} "
            f"(device {h.device_hit_rate:.4f} + host {h.host_hit_rate:.4f})")
    return cells


# ------------------------------------------------------------------------------- tables
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def session_table(cells: list[Cell], workload: str, pool: int) -> str:
    """Gap closed (hit rate) per coverage x error for one workload and pool."""
    here = [c for c in cells if c.workload == workload and c.pool == pool]
    ref = {c.policy: c for c in here if c.coverage is None}
    lines = [f"lru {_pct(ref['lru'].hit_rate)}, oracle {_pct(ref['oracle'].hit_rate)} "
             f"(pool {pool:,} tokens)", "",
             "| policy | coverage | gap closed, error 0 | gap closed, error 0.1 | "
             "hit rate, error 0 | hit rate, error 0.1 | vs lru, error 0.1 |",
             "|---|--:|--:|--:|--:|--:|--:|"]
    for policy in dict.fromkeys(c.policy for c in here if c.coverage is not None):
        for cov in COVERAGES:
            by = {c.error: c for c in here if c.policy == policy and c.coverage == cov}
            e0, e1 = by.get(0.0), by.get(0.1, by.get(0.0))
            if e0 is None or e1 is None:
                continue
            lines.append(f"| {policy} | {cov:g} | {_pct(e0.gap_closed)} | {_pct(e1.gap_closed)}"
                         f" | {_pct(e0.hit_rate)} | {_pct(e1.hit_rate)} | "
                         f"{100 * (e1.hit_rate - ref['lru'].hit_rate):+.1f} points |")
    return "\n".join(lines)


def agentic_table(cells: list[Cell]) -> str:
    """p99 TTFT per hint, coverage and error; lru and the oracle for reference."""
    ref = {c.policy: c for c in cells if c.coverage is None}
    lru = ref["lru"].p99_ttft_ms or 0.0
    params = ", ".join(f"{k}={v:g}" for k, v in AGENTIC.items())
    lines = [f"`agentic` ({params}; pool {ref['lru'].pool:,} tokens, seed {AGENTIC_SEEDS[0]}; "
             f"means over seeds {', '.join(map(str, AGENTIC_SEEDS))}), default cost model: "
             f"lru p99 TTFT {lru:,.0f} ms, hit rate {_pct(ref['lru'].hit_rate)}; oracle "
             f"(Belady-guided, a reference): {ref['oracle'].p99_ttft_ms or 0:,.0f} ms, "
             f"{_pct(ref['oracle'].hit_rate)}.", "",
             "| hint | policy | coverage | error | p99 TTFT ms | vs lru | hit rate | trust |",
             "|---|---|--:|--:|--:|--:|--:|--:|"]
    for c in cells:
        if c.coverage is None:
            continue
        p99 = c.p99_ttft_ms or 0.0
        lines.append(f"| {c.hint} | {c.policy} | {c.coverage:g} | {c.error:g} | {p99:,.0f} | "
                     f"{100 * (p99 - lru) / lru:+.1f}% | {_pct(c.hit_rate)} | "
                     f"{(c.extra or {}).get('trust', '-')} |")
    return "\n".join(lines)


def admission_table(cells: list[Cell]) -> str:
    """Host writes saved against device-plus-host hit rate lost, per write and admission policy."""
    base = cells[0]
    w0 = (base.extra or {})["written_tokens"]
    lines = [f"Host tier {(base.extra or {})['host_tokens']:,} tokens (ratio 2), device pool "
             f"{base.pool:,} tokens, lru on both tiers; baseline: {base.hint} (SGLang's "
             f"default); hits lost against it; PCIe GB: tokens written and loaded back at "
             f"{(base.extra or {})['pcie_cost_model']}'s KV size.", "",
             "| write policy + admission | written to host | writes saved | PCIe GB | device hit "
             "| host hit | device + host | hits lost |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
    for c in cells:
        x = c.extra or {}
        lines.append(f"| {c.hint} | {x['written_tokens']:,} | "
                     f"{100 * (1 - x['written_tokens'] / w0):.1f}% | "
                     f"{x['pcie_bytes'] / 1e9:,.0f} | {_pct(x['device_hit'])} | "
                     f"{_pct(x['host_hit'])} | {_pct(c.hit_rate)} | "
                     f"{100 * (base.hit_rate - c.hit_rate):+.2f} points |")
    return "\n".join(lines)


def _cell(cells: list[Cell], workload: str, policy: str, cov: float | None = None,
          err: float | None = None, pool: int | None = None) -> Cell:
    return next(c for c in cells if c.workload == workload and c.policy == policy
                and c.coverage == cov and c.error == err and (pool is None or c.pool == pool))


def goals_table(by_part: dict[str, list[Cell]]) -> str:
    """The issue's goals, each with its figure (needs every part)."""
    rows = []
    sess = by_part["session"]
    for trace, target in (("conversation", 0.20), ("synthetic", 0.25)):
        pool = max(c.pool for c in sess if c.workload == trace and c.pool <= GOAL_POOL)
        full = _cell(sess, trace, "session", 1.0, 0.0, pool).gap_closed or 0.0
        half = _cell(sess, trace, "session", 0.5, 0.0, pool).gap_closed or 0.0
        rows.append((f"{trace} trace, pool 4M, session-end at coverage 1: gap closed",
                     _pct(full), f">= {100 * target:.0f}%", full >= target))
        rows.append((f"{trace} trace, pool 4M, coverage 0.5: gap closed",
                     _pct(half), f">= {50 * target:.1f}%", half >= target / 2))
    wrong = [(c.hit_rate - _cell(sess, c.workload, "lru", pool=c.pool).hit_rate,
              f"{c.policy}, {c.workload}, pool {c.pool:,}, coverage {c.coverage:g}")
             for c in sess if c.error == 0.1 and c.coverage]
    if wrong:
        worst, where = min(wrong)
        rows.append((f"error 0.1, every trace, pool and coverage: hit rate against lru (worst: "
                     f"{where})", f"{100 * worst:+.2f} points", ">= -1 point", worst >= -0.01))
    ag = by_part["agentic"]
    lru = _cell(ag, "agentic", "lru").p99_ttft_ms or 1.0
    best = _cell(ag, "agentic", "retain", 1.0, 0.0).p99_ttft_ms or lru
    rows.append(("agentic under load, next-request hints at coverage 1: p99 TTFT against lru",
                 f"{100 * (best - lru) / lru:+.1f}%", "<= -20%", (best - lru) / lru <= -0.2))
    adm = by_part["admission"]
    w0 = (adm[0].extra or {})["written_tokens"]
    def saved_of(c: Cell) -> float:
        return 1 - (c.extra or {})["written_tokens"] / w0

    same = [c for c in adm[1:] if c.hint.startswith(adm[0].hint + " +")]
    halved = [c for c in same if saved_of(c) >= 0.5]
    good = (min(halved, key=lambda c: adm[0].hit_rate - c.hit_rate) if halved
            else max(same, key=saved_of))
    saved = saved_of(good)
    lost = adm[0].hit_rate - good.hit_rate
    rows.append((f"admission, host tier at ratio 2, conversation trace: {good.hint} against "
                 f"{adm[0].hint}", f"{100 * saved:.0f}% fewer writes, " + (
                     f"{100 * lost:.2f} points lost" if lost > 0 else
                     f"{-100 * lost:.2f} points gained"),
                 "writes halved, <= 1 point lost", saved >= 0.5 and lost <= 0.01))
    lines = ["| goal | measured | target | met? |", "|---|--:|--:|:-:|"]
    lines += [f"| {g} | {m} | {t} | {'yes' if ok_ else '**no**'} |" for g, m, t, ok_ in rows]
    return "\n".join(lines)


def render(part: str, cells: list[Cell]) -> dict[str, str]:
    """Section name -> markdown table (docs/hints.md's ``<!-- bench:NAME -->`` sections)."""
    cmd = f"`python bench/bench_hints.py {part}`"
    if part == "agentic":
        return {"agentic": f"{cmd}:\n\n{agentic_table(cells)}"}
    if part == "admission":
        return {"admission": f"{cmd}:\n\n{admission_table(cells)}"}
    if part == "timed":
        return {"session-timed": f"{cmd}:\n\n{timed_table(cells)}"}
    out = {}
    for workload in dict.fromkeys(c.workload for c in cells):
        pools = sorted({c.pool for c in cells if c.workload == workload})
        out[f"session-{workload}"] = f"{cmd}:\n\n" + "\n\n".join(
            session_table(cells, workload, p) for p in pools)
    return out


def write_docs(sections: dict[str, str], page: Path = DOCS) -> None:
    """Replace each ``<!-- bench:NAME -->`` ... ``<!-- /bench:NAME -->`` body in ``page``."""
    text = page.read_text(encoding="utf-8")
    for name, body in sections.items():
        pat = re.compile(rf"(<!-- bench:{re.escape(name)} -->\n).*?(<!-- /bench:"
                         rf"{re.escape(name)} -->)", re.DOTALL)
        m = pat.search(text)
        if m is None:
            raise SystemExit(f"{page}: no section <!-- bench:{name} -->")
        text = (text[:m.start()] + f"{m.group(1)}\n{body}\n\n{m.group(2)}"
                + text[m.end():])
    page.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("session", "timed", "agentic", "admission", "all"))
    ap.add_argument("--goal-only", action="store_true",
                    help="session: the 4M pool only (the goal's), not every results-page pool")
    ap.add_argument("--write-docs", action="store_true", help="write the tables into "
                    "docs/hints.md's bench sections")
    ap.add_argument("--json", type=Path, help="also write every cell to this JSON file")
    ap.add_argument("--from-json", type=Path, help="render (and --write-docs) the cells a "
                    "--json run wrote, replaying nothing")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    parts = ("session", "timed", "agentic", "admission") if args.part == "all" else (args.part,)
    sections: dict[str, str] = {}
    every: dict[str, list[dict[str, Any]]] = {}
    saved = json.loads(args.from_json.read_text(encoding="utf-8")) if args.from_json else {}
    for part in parts:
        if args.from_json:
            cells = [Cell(**c) for c in saved[part]]
        else:
            run = {"session": lambda: run_session(args.goal_only, log),
                   "timed": lambda: run_timed(log), "agentic": lambda: run_agentic(log),
                   "admission": lambda: run_admission(log)}[part]
            cells = run()
        every[part] = [c.__dict__ for c in cells]
        sections.update(render(part, cells))
    if args.part == "all":
        by_part = {k: [Cell(**c) for c in v] for k, v in every.items()}
        sections["goals"] = f"`python bench/bench_hints.py all`:\n\n{goals_table(by_part)}"
    for name, body in sections.items():
        print(f"## {name}\n\n{body}\n")
    if args.json:
        args.json.write_text(json.dumps(every, indent=1), encoding="utf-8")
    if args.write_docs:
        write_docs(sections)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
