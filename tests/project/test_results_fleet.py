"""The results page's fleet section comes from the sweep's fleet rows (docs/gen/results_fleet.py).

The fleet cells (replicas behind a router) have their own table, stay out of
the single-server tables, and the sentence on what the router saves follows
the rows: edit a figure and the sentence changes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import results, results_fleet  # noqa: E402

Row = dict[str, Any]


def _fleet() -> list[Row]:
    return results_fleet.fleet_rows(results.load_rows())


def test_the_sweep_has_a_fleet_of_both_routers_and_both_policies() -> None:
    fleet = _fleet()
    assert {(r["policy"], r["router"], r["replicas"]) for r in fleet} == {
        (p, rt, n) for p in ("lru", "tlru") for rt in ("round_robin", "cache_aware")
        for n in (6, 10)}
    assert all(r["workload"].endswith(results.CONVERSATION) for r in fleet)
    assert all(r["slo_attainment"] is not None and r["balance_requests"] >= 1 for r in fleet)


def test_the_page_shows_every_fleet_row() -> None:
    page = results.PAGE.read_text(encoding="utf-8")
    fleet_part = page.split("## Fleet")[1]
    for r in _fleet():
        p99 = f"{r['ttft_p99_ms']:,.0f}"
        line = next(ln for ln in fleet_part.splitlines()
                    if ln.startswith(f"| {r['policy']} | {r['router']} | {r['replicas']} |"))
        assert p99 in line and f"{100 * r['hit_rate']:.1f}%" in line
        assert f"{100 * r['slo_attainment']:.1f}%" in line
        assert f"{r['balance_requests']:.2f}" in line
    assert "](fleet.md" in fleet_part


def test_fleet_rows_stay_out_of_the_single_server_tables() -> None:
    rows = results.load_rows()
    f = results.Figures(rows)
    single = next(r for r in rows if r["policy"] == "lru" and r.get("replicas") is None
                  and r["workload"].endswith(results.CONVERSATION)
                  and r["pool_tokens"] == 3_999_744 and r.get("cost_model") is not None)
    assert f.ttft[single["workload"], "lru", 3_999_744] == single["ttft_p99_ms"]


def test_what_the_router_saves_follows_the_rows() -> None:
    fleet = _fleet()
    slo = 10_000.0
    lines = results_fleet.savings(fleet, slo)
    need = {(p, rt): results_fleet.fewest(fleet, p, rt, slo)
            for p in ("lru", "tlru") for rt in ("round_robin", "cache_aware")}
    for line, p in zip(lines, ("lru", "tlru"), strict=True):
        assert line.startswith(f"- {p}:")
        for rt in ("round_robin", "cache_aware"):
            n = need[p, rt]
            assert (f"{rt} {n}" if n is not None else f"{rt} more than 10") in line
    # make round_robin miss the SLO at 10 replicas too: it then needs more than were swept
    edited = [dict(r, ttft_p99_ms=slo + 1) if r["router"] == "round_robin" else r
              for r in fleet]
    for line in results_fleet.savings(edited, slo):
        assert "round_robin more than 10" in line and "saves" not in line
    # and make cache_aware miss at 6: the saving shrinks to nothing
    edited = [dict(r, ttft_p99_ms=slo + 1)
              if r["router"] == "cache_aware" and r["replicas"] == 6 else dict(r, ttft_p99_ms=1.0)
              for r in fleet]
    for line in results_fleet.savings(edited, slo):
        assert "round_robin 6, cache_aware 10" in line and "round_robin saves 4 of 10" in line


def test_a_resumed_run_names_each_part() -> None:
    meta = {**results.load_meta(), "date": "2026-12-05", "commit": "bbbbbbb",
            "earlier": [{"cells": 3, "date": "2026-12-04", "commit": "aaaaaaa"}]}
    line = results._run_line(meta, [{"via": "replay"}] * 5)
    assert "5 cells" in line
    assert "3 cells on 2026-12-04 (commit aaaaaaa)" in line
    assert "the 2 cells those rows lacked on 2026-12-05" in line and "--resume" in line
    del meta["earlier"]
    assert "run on 2026-12-05 with" in results._run_line(meta, [{"via": "replay"}] * 5)
