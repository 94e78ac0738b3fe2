"""The results page: every policy on the Mooncake traces and the chat workload, from one sweep.

``python docs/generate.py results --measure`` runs :data:`COMMAND` (one
``radix-evict sweep`` of the grid file ``docs/results/sweep.toml``: every
installed policy, the hidden baselines too, with the oracle and the
ceiling, each cell in the token replay and in the timed replay), keeping its
rows in ``docs/results/rows.jsonl`` and what ran it (date, versions, wall
time) in ``docs/results/meta.json``. ``python docs/generate.py results``
renders docs/results.md's generated section from those two files; ``all
--check`` (and tests/project/test_results_page.py) fail when the page and
the rows disagree.

The figures: *hit rate* is the token replay's (what ``simulate`` reports);
*gap closed* is ``(policy - lru) / (oracle - lru)`` on those hit rates, at
the same pool; *p99 TTFT* is the timed replay's, with the default cost model.
The oracle row's hit rate is the token replay's offline bound; its p99 TTFT
is the timed replay's Belady-guided oracle, a reference and no bound: each
named as :mod:`radix_evict.sim.bound` names it, and no gap is measured
against a timed figure.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from radix_evict.sim.bound import (
    CEILING_NAME,
    ORACLE_NAME,
    ORACLE_TIMED_NAME,
    ceiling_is,
    oracle_is,
)
from radix_evict.sim.sweep.schema import TIMING_FIELDS, is_fleet, is_hybrid

from .common import DOCS, ROOT, apply_sections, md_cell, write_text
from .results_fleet import section as fleet_section
from .results_hybrid import section as hybrid_section

PAGE = DOCS / "results.md"
FOLDER = DOCS / "results"
GRID = FOLDER / "sweep.toml"
ROWS = FOLDER / "rows.jsonl"
META = FOLDER / "meta.json"
JOBS = 2  # worker processes: two cores, shared
ARGS = ["sweep", "--grid", GRID.relative_to(ROOT).as_posix(), "--jobs", str(JOBS),
        "--out", ROWS.relative_to(ROOT).as_posix()]
COMMAND = "radix-evict " + shlex.join(ARGS)
DISTRIBUTIONS = ("radix-evict", "radix-evict-classics", "radix-evict-costaware",
                 "radix-evict-learned")

ORACLE, CEILING, REFERENCE = "oracle", "ceiling", "lru"
LEARNED = "learned"
CONVERSATION = "mooncake_conversation_trace.jsonl"
SYNTHETIC = "mooncake_synthetic_trace.jsonl"
GOAL_POOL = 4_000_000  # the pool for the learned policy's gap goals (whole pages below)
GAP_GOALS = ((CONVERSATION, 0.25), (SYNTHETIC, 0.15))  # share of the lru-to-oracle gap
MAX_LOSS = 0.01  # hit rate the learned policy may lose against lru, anywhere in the table

Row = dict[str, Any]


# --------------------------------------------------------------------------- measuring


def measure(resume: bool = False) -> tuple[dict[str, Any], float]:
    """Run :data:`COMMAND` from the repository root; write rows.jsonl and meta.json.

    Afresh by default; with ``resume`` the sweep starts from the committed
    rows (a sweep resumes from its result file) and runs only the cells they
    lack (a grid added to sweep.toml), and meta.json keeps the earlier runs'
    dates and commits under ``earlier`` beside this run's.

    The grid file names the traces relative to itself (``../shared/traces``
    from the repository root, read in place); rows name them as seen from the
    root. The rows are then rewritten as :func:`reproducible_rows` makes them
    (grid order, no timings), so a rerun changes only the figures that
    changed. Returns the meta written and the sweep's wall time (printed,
    never written).
    """
    from importlib import metadata

    earlier: list[dict[str, Any]] = []
    kept = 0
    if resume and ROWS.exists():
        kept = len(load_rows())
        if kept and META.exists():
            before = load_meta()
            earlier = [*before.get("earlier", []),
                       {"cells": before["cells"] - sum(e["cells"] for e in
                                                       before.get("earlier", [])),
                        "date": before["date"], "commit": before["commit"]}]
    else:
        ROWS.unlink(missing_ok=True)
    exe = Path(sys.executable).parent / "radix-evict"
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    subprocess.run([str(exe), *ARGS, "--no-progress"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    ROWS.with_name(ROWS.name + ".lock").unlink(missing_ok=True)  # the sweep's lock: ours, done
    rows = reproducible_rows(load_rows(), grid_keys())
    write_text(ROWS, "".join(json.dumps(r) + "\n" for r in rows))
    meta = {
        "command": COMMAND,
        "date": started.strftime("%Y-%m-%d"),
        "jobs": JOBS,
        "cells": len(load_rows()),
        "versions": {d: metadata.version(d) for d in DISTRIBUTIONS},
        "python": platform.python_version(),
        "core": core_build(),
        **code_state(),
        **({"earlier": earlier} if earlier else {}),
    }
    write_text(META, json.dumps(meta, indent=1) + "\n")
    return meta, wall


def grid_keys() -> list[str]:
    """The keys of :data:`GRID`'s cells in grid order, expanded as the command does
    (from the repository root, where the rows name the traces)."""
    from radix_evict.sim.sweep import make_grids, plan_sweep, read_grid_file

    here = Path.cwd()
    try:
        os.chdir(ROOT)
        return [c.key for c in plan_sweep(make_grids(read_grid_file(
            GRID.relative_to(ROOT)))).cells]
    finally:
        os.chdir(here)


def reproducible_rows(rows: Sequence[Row], order: Sequence[str]) -> list[Row]:
    """``rows`` in the grid's order (``order``: cell keys), without what depends on the
    machine and the moment (the sweep's timing columns, ``replay_s`` and ``cache_s``).

    A sweep writes rows as cells finish, each with its wall and cache seconds;
    the committed file keeps the figures only, in one order, so measuring again
    leaves it unmodified wherever the figures did not change.
    """
    place = {key: i for i, key in enumerate(order)}
    missing = [r["cell"] for r in rows if r["cell"] not in place]
    if missing:
        raise ValueError(f"{len(missing)} rows are not cells of {GRID.name}: {missing[0]}")
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in sorted(rows, key=lambda r: place[r["cell"]])]


CODE = ("core", "builtin_policies", "cli", "plugins_example")  # what the figures depend on


def core_build() -> str:
    """``compiled`` or ``pure Python``: how the cache's hot modules ran (the same replays)."""
    import radix_evict.cache.radix_cache as module

    return "compiled" if str(module.__file__).endswith((".so", ".pyd")) else "pure Python"


def code_state() -> dict[str, Any]:
    """The commit the code is at, and the code files that differ from it (uncommitted)."""
    status = _git("status", "--porcelain", "--", *CODE)
    return {"commit": _git("rev-parse", "--short", "HEAD"),
            "changed_files": sorted(line[3:] for line in status.splitlines() if line[3:])}


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.stdout.rstrip() if proc.returncode == 0 else ""


def load_rows(path: Path = ROWS) -> list[Row]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_meta(path: Path = META) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- reading the rows


@dataclass(frozen=True)
class Workload:
    """One workload of the table: how rows name it, its title, its pools."""

    name: str  # the rows' ``workload`` (a trace by its path)
    title: str
    pools: tuple[int, ...]
    page_size: int


def _title(name: str) -> str:
    base = Path(name).name
    if base == CONVERSATION:
        return "Mooncake conversation trace"
    if base == SYNTHETIC:
        return "Mooncake synthetic trace"
    return f"`{name}` workload" if "/" not in name else f"`{base}`"


def workloads(rows: Sequence[Row]) -> list[Workload]:
    """The workloads in the rows' order, each with the pools its policies ran at."""
    out: dict[str, Workload] = {}
    for r in rows:
        if r["policy"] == CEILING or r["pool_tokens"] is None or is_fleet(r) or is_hybrid(r):
            continue
        w = out.get(r["workload"])
        pools = tuple(sorted({*(w.pools if w else ()), r["pool_tokens"]}))
        out[r["workload"]] = Workload(r["workload"], _title(r["workload"]), pools,
                                      r["page_size"])
    return list(out.values())


def policies(rows: Sequence[Row]) -> list[str]:
    """The servable policies in the sweep's order (the grid's), references left out."""
    return list(dict.fromkeys(r["policy"] for r in rows
                              if r["policy"] not in (ORACLE, CEILING)))


class Figures:
    """The rows by (workload, policy, pool): token-replay hit rates, timed p99 TTFTs."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self.hit: dict[tuple[str, str, int | None], float] = {}
        self.ttft: dict[tuple[str, str, int | None], float] = {}
        self.ceiling: dict[str, float] = {}
        self.failed: list[Row] = []
        for r in rows:
            if r["status"] != "ok":
                self.failed.append(r)
                continue
            if is_fleet(r) or is_hybrid(r):  # own tables: results_fleet.py, results_hybrid.py
                continue
            timed = r.get("cost_model") is not None
            if r["policy"] == CEILING:
                if not timed:
                    self.ceiling[r["workload"]] = r["hit_rate"]
                continue
            key = (r["workload"], r["policy"], r["pool_tokens"])
            if timed:
                self.ttft[key] = r["ttft_p99_ms"]
            else:
                self.hit[key] = r["hit_rate"]

    def gap_closed(self, workload: str, policy: str, pool: int) -> float | None:
        """(policy - lru) / (oracle - lru) at this pool; None without a gap (or a figure)."""
        h = self.hit.get((workload, policy, pool))
        lru = self.hit.get((workload, REFERENCE, pool))
        oracle = self.hit.get((workload, ORACLE, pool))
        if h is None or lru is None or oracle is None or oracle - lru <= 1e-12:
            return None
        return (h - lru) / (oracle - lru)


# --------------------------------------------------------------------------- rendering


def pool_label(tokens: int, page_size: int) -> str:
    """``4M`` for 3,999,744 tokens of 512-token pages, ``200K``: the pool as asked for."""
    for unit, suffix in ((1_000_000, "M"), (1_000, "K")):
        near = round(tokens / unit * 10) / 10
        if near >= 1 and abs(near * unit - tokens) < page_size:
            return f"{near:g}{suffix}"
    return f"{tokens:,}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _gap(x: float | None) -> str:
    if x is None:
        return "-"
    text = f"{100 * x:.1f}%"
    return "0.0%" if text == "-0.0%" else text


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _best(values: Mapping[str, float], highest: bool) -> set[str]:
    """The policies with the best value as the tables print it (ties all marked).

    Compared at the printed precision (0.1% of hit rate, 1 ms of TTFT), so two
    figures that read the same are both best.
    """
    if not values:
        return set()
    shown = {p: round(v * 1000) if highest else round(v) for p, v in values.items()}
    top = max(shown.values()) if highest else min(shown.values())
    return {p for p, v in shown.items() if v == top}


def _bold(text: str, on: bool) -> str:
    return f"**{text}**" if on else text


# The oracle row holds two replays' figures: the token replay's hit rate (a bound) and the
# timed replay's p99 TTFT (Belady-guided, no bound).
ORACLE_ROW = (f"{ORACLE_NAME}; p99 TTFT: "
              f"{ORACLE_TIMED_NAME.removeprefix('oracle (').removesuffix(')')}")


def references_note() -> str:
    """What the oracle and ceiling rows are, in :mod:`radix_evict.sim.bound`'s words."""
    return (f"The *oracle* rows: hit rate and gap closed are the token replay's, where the "
            f"oracle is an {oracle_is(False)}; p99 TTFT is the timed replay's "
            f"{ORACLE_TIMED_NAME}: {oracle_is(True)}; no TTFT is ranked against it. The "
            f"*ceiling*'s hit rate is the token replay's, with {ceiling_is(False)}.")


def workload_table(f: Figures, w: Workload, names: Sequence[str]) -> list[str]:
    """One workload: a line per policy (then the oracle and the ceiling), three columns per pool.

    Bold: the highest hit rate and the lowest p99 TTFT of a servable policy at each pool.
    """
    head = ["policy"]
    for pool in w.pools:
        label = pool_label(pool, w.page_size)
        head += [f"{label} hit rate", f"{label} gap closed", f"{label} p99 TTFT ms"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 1)]
    best_hit = {pool: _best({p: f.hit[w.name, p, pool] for p in names
                             if (w.name, p, pool) in f.hit}, highest=True) for pool in w.pools}
    best_ttft = {pool: _best({p: f.ttft[w.name, p, pool] for p in names
                              if (w.name, p, pool) in f.ttft}, highest=False)
                 for pool in w.pools}
    for p in [*names, ORACLE]:
        cells = []
        for pool in w.pools:
            ref = p == ORACLE
            cells += [_bold(_pct(f.hit.get((w.name, p, pool))), p in best_hit[pool] and not ref),
                      _gap(f.gap_closed(w.name, p, pool)),
                      _bold(_ms(f.ttft.get((w.name, p, pool))), p in best_ttft[pool] and not ref)]
        name = f"*{ORACLE_ROW}*" if p == ORACLE else p
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    top = f.ceiling.get(w.name)
    if top is not None:
        lines.append(f"| *{CEILING_NAME}* | "
                     + " | ".join(f"{_pct(top)} | - | -" for _ in w.pools) + " |")
    return lines


def winners(f: Figures, w: Workload, names: Sequence[str]) -> str:
    """Who has the highest hit rate and the lowest p99 TTFT at each pool, in one line."""
    parts = []
    for pool in w.pools:
        hits = {p: f.hit[w.name, p, pool] for p in names if (w.name, p, pool) in f.hit}
        ttfts = {p: f.ttft[w.name, p, pool] for p in names if (w.name, p, pool) in f.ttft}
        if not hits:
            continue
        hit_top = sorted(_best(hits, highest=True))
        lru = hits.get(REFERENCE)
        gain = "" if lru is None else f", {100 * (hits[hit_top[0]] - lru):+.1f} points on lru"
        text = (f"{pool_label(pool, w.page_size)}: hit rate {', '.join(hit_top)} "
                f"({_pct(hits[hit_top[0]])}{gain})")
        if ttfts:
            ttft_top = sorted(_best(ttfts, highest=False))
            text += f", p99 TTFT {', '.join(ttft_top)} ({_ms(ttfts[ttft_top[0]])} ms)"
        parts.append(text)
    return f"- {w.title}: " + "; ".join(parts) + "."


def gap_summary(f: Figures, ws: Sequence[Workload], names: Sequence[str]) -> list[str]:
    """How much of the lru-to-oracle gap the best servable policy closes anywhere, and the gaps."""
    closed = [(g, p, w, pool) for w in ws for pool in w.pools for p in names
              if (g := f.gap_closed(w.name, p, pool)) is not None]
    gaps = [f.hit[w.name, ORACLE, pool] - f.hit[w.name, REFERENCE, pool] for w in ws
            for pool in w.pools if (w.name, ORACLE, pool) in f.hit
            and (w.name, REFERENCE, pool) in f.hit]
    if not closed or not gaps:
        return []
    g, p, w, pool = max(closed, key=lambda x: x[0])
    return [f"The lru-to-oracle gap is {100 * min(gaps):.1f} to {100 * max(gaps):.1f} points of "
            f"hit rate across the tables; the most of it any servable policy closes is "
            f"{_gap(g)} ({p}, {w.title}, {pool_label(pool, w.page_size)}).", ""]


def goal_table(f: Figures, ws: Sequence[Workload]) -> list[str]:
    """The learned policy against its goals (issue #24), met or not, from the same rows.

    At pool 4M of each trace it should close :data:`GAP_GOALS` of the
    lru-to-oracle gap; on chat, and at every pool size of the tables, lose no
    more than :data:`MAX_LOSS` of hit rate against lru.
    """
    lines = ["| goal | lru | learned | oracle | learned - lru | gap closed | target | met? |",
             "|---|--:|--:|--:|--:|--:|--:|:-:|"]
    targets = dict(GAP_GOALS)
    for w in ws:
        target = targets.get(Path(w.name).name)
        pool = next((p for p in w.pools if abs(p - GOAL_POOL) < w.page_size), None)
        if target is None or pool is None:
            continue
        lru, mine, oracle = (f.hit.get((w.name, p, pool)) for p in (REFERENCE, LEARNED, ORACLE))
        if lru is None or mine is None or oracle is None:
            continue
        gap = f.gap_closed(w.name, LEARNED, pool)
        need = lru + target * (oracle - lru)
        met = gap is not None and gap >= target
        lines.append(f"| {w.title}, page {w.page_size}, pool {pool_label(pool, w.page_size)}: "
                     f"close {100 * target:.0f}% of the gap | {_pct(lru)} | **{_pct(mine)}** | "
                     f"{_pct(oracle)} | {_points(mine - lru)} | **{_gap(gap)}** | "
                     f">= {100 * target:.0f}% (hit rate >= {_pct(need)}) | "
                     f"{'yes' if met else '**no**'} |")
    for w in ws:
        if Path(w.name).name not in targets:
            for pool in w.pools:
                lines.append(_loss_line(f, [(w, pool)], w.title))
    lines.append(_loss_line(f, [(w, pool) for w in ws for pool in w.pools],
                            "Every workload and pool size above"))
    return lines


def _points(delta: float) -> str:
    return f"{100 * delta:+.1f} points"


def _loss_line(f: Figures, pairs: Sequence[tuple[Workload, int]], what: str) -> str:
    """The largest hit-rate loss of learned against lru over ``pairs``, as a goal line."""
    found = [(f.hit[w.name, LEARNED, pool] - f.hit[w.name, REFERENCE, pool], w, pool)
             for w, pool in pairs
             if (w.name, LEARNED, pool) in f.hit and (w.name, REFERENCE, pool) in f.hit]
    goal = f"lose at most {100 * MAX_LOSS:.0f} point of hit rate against lru"
    if not found:
        return f"| {what}: {goal} | - | - | | | | | - |"
    delta, w, pool = min(found, key=lambda x: x[0])
    lru, mine = f.hit[w.name, REFERENCE, pool], f.hit[w.name, LEARNED, pool]
    where = (f" (worst: {w.title}, {pool_label(pool, w.page_size)})" if len(pairs) > 1
             else "")
    met = delta >= -MAX_LOSS - 1e-12
    return (f"| {what}: {goal}{where} | {_pct(lru)} | **{_pct(mine)}** | | "
            f"**{_points(delta)}** | | >= {_points(-MAX_LOSS)} | "
            f"{'yes' if met else '**no**'} |")


def _run_line(meta: Mapping[str, Any], rows: Sequence[Row]) -> str:
    """The command and what ran it; no wall time (it is the machine's, not the code's)."""
    versions = ", ".join(f"{d} {v}" for d, v in meta["versions"].items())
    changed = meta.get("changed_files") or []
    dirty = f" with uncommitted changes to {', '.join(changed)}" if changed else ""
    core = f", {meta['core']} core" if meta.get("core") else ""
    curve = sum(r.get("via") == "curve" for r in rows)
    via = (f" ({curve} lru cells from one pool-size curve pass per workload, `via` "
           f"`curve` in the rows; docs/pool-curve.md)" if curve else "")
    earlier = meta.get("earlier") or []
    run = f"run on {meta['date']}"
    if earlier:  # resumed (results --measure --resume): the earlier runs' cells were kept
        now = len(rows) - sum(e["cells"] for e in earlier)
        run = ("run in parts: " + ", ".join(f"{e['cells']} cells on {e['date']} (commit "
                                            f"{e['commit']})" for e in earlier)
               + f", then the {now} cells those rows lacked on {meta['date']}, the sweep "
               f"resuming from them (`python docs/generate.py results --measure --resume`),")
    return (f"`{meta['command']}`: {len(rows)} cells{via} on "
            f"{meta['jobs']} worker processes, {run} with {versions} "
            f"(Python {meta['python']}{core}; commit {meta['commit']}{dirty}).")


def section(rows: Sequence[Row], meta: Mapping[str, Any]) -> str:
    """The generated part of docs/results.md: the command and run, the tables, the goals."""
    f = Figures(rows)
    names = policies(rows)
    ws = workloads(rows)
    out = [_run_line(meta, rows), ""]
    if meta.get("command") != COMMAND:
        out += [f"(This file's command is now `{COMMAND}`: rerun it.)", ""]
    if f.failed:
        out += [f"**{len(f.failed)} cells failed**: "
                + "; ".join(md_cell(f"{r['policy']} {r['workload']}: {r.get('error')}")
                            for r in f.failed), ""]
    out += [references_note(), ""]
    for w in ws:
        pools = ", ".join(f"{pool_label(p, w.page_size)} = {p:,}" for p in w.pools)
        out += [f"### {w.title}", "",
                f"Page size {w.page_size}; pool{'s' * (len(w.pools) > 1)} in tokens "
                f"(whole pages): {pools}.", "",
                *workload_table(f, w, names), ""]
    out += ["### Who wins where", "",
            "Highest token hit rate and lowest p99 TTFT among the servable policies:", "",
            *(winners(f, w, names) for w in ws), "", *gap_summary(f, ws, names),
            "### The learned policy against its goal", "",
            *goal_table(f, ws)]
    fleet = fleet_section(rows, _title, pool_label)
    if fleet:
        out += ["", *fleet[:-1]]  # the fleet cells (results_fleet.py)
    hybrid = hybrid_section(rows, _title)
    if hybrid:
        out += ["", *hybrid[:-1]]  # the hybrid models' cells (results_hybrid.py)
    return "\n".join(out)


def page() -> dict[Path, str]:
    """docs/results.md as it should read for the committed rows and meta."""
    text = PAGE.read_text(encoding="utf-8")
    return {PAGE: apply_sections(text, {"results": section(load_rows(), load_meta())},
                                 PAGE.name)}
