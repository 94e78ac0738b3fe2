"""Issue #36, items 4/5 for the sweep: the references named for what they are, everywhere.

The timed oracle is a Belady-guided replay, not a bound, and the timed ceiling no proven
bound: the sweep's tables, plots and JSON name them as ``radix_evict.sim.bound`` does
(as ``simulate`` does), and only the token replay's are called bounds.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.rigs import run_cli

from radix_evict.cli.sweep_report import curve_table, host_curve_table, rows_table
from radix_evict.sim.bound import CEILING_NAME, ORACLE_NAME, ORACLE_TIMED_NAME, references
from radix_evict.sim.sweep.draw import _line
from radix_evict.sim.sweep.summary import (
    Curve,
    HostCurve,
    point_ceilings,
    point_label,
    reference_lines,
)

BASE = ["-p", "lru", "-P", "convs=5", "--pool-tokens", "10K,20K", "--oracle", "--no-progress"]


def _caption(table: Any) -> str:
    return " ".join(str(table.caption).split())


def _sweep(*args: str) -> dict[str, Any]:
    r = run_cli("sweep", *BASE, *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["summary"]


def test_a_timed_sweep_names_its_oracle_and_ceiling_references_not_bounds() -> None:
    summary = _sweep("--timing", "--rate", "2,8")
    curves = [c for c in summary["curves"] if c["policy"] == "oracle"]
    assert len(curves) == 2
    assert all(c["name"] == ORACLE_TIMED_NAME and c["is_bound"] is False for c in curves)
    refs = summary["references"]
    assert len(refs) == 2 and {r["timing"] for r in refs} == {c["timing"] for c in curves}
    for ref in refs:
        assert ref["oracle"] == references(True)["oracle"]
        assert ref["ceiling"]["is_bound"] is False and ref["gap_closed"] is None
        assert "not a bound" in ref["oracle"]["is"]


def test_each_timing_point_has_its_own_ceiling_not_the_mean_over_points() -> None:
    def row(rate: float, hit: float) -> dict[str, Any]:
        return {"workload": "chat", "policy": "ceiling", "status": "ok", "hit_rate": hit,
                "cost_model": "m", "max_running": None, "rate": rate, "pool_tokens": None}

    rows = [row(2.0, 0.5), row(8.0, 0.7)]
    tops = point_ceilings(rows)
    assert sorted(tops.values()) == [0.5, 0.7] and len(tops) == 2
    assert {r["timing"]: r["ceiling"]["hit_rate"] for r in reference_lines(rows)} == {
        point_label(rows[0]): 0.5, point_label(rows[1]): 0.7}


def test_a_token_sweep_s_oracle_is_the_offline_bound() -> None:
    summary = _sweep()
    (curve,) = [c for c in summary["curves"] if c["policy"] == "oracle"]
    assert curve["name"] == ORACLE_NAME and curve["is_bound"] is True
    (ref,) = summary["references"]
    assert ref["timing"] is None and ref["oracle"]["is_bound"] and ref["ceiling"]["is_bound"]
    assert "only where the oracle is a bound" in ref["gap_closed"]


def test_the_timed_tables_say_what_the_references_are() -> None:
    r = run_cli("sweep", *BASE, "--timing")
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert ORACLE_TIMED_NAME in text and CEILING_NAME in text
    assert "a reference, not a bound" in text and "not a proven bound" in text
    assert ORACLE_NAME not in text and "offline" not in text


def test_curve_tables_and_captions_follow_the_replay() -> None:
    lines = [Curve("w", "lru", None, [(10, 0.2)]), Curve("w", "oracle", None, [(10, 0.3)])]
    token = curve_table(lines, "w", 0.5)
    assert ORACLE_NAME in [str(c) for c in token.columns[0]._cells]
    assert "offline bound" in _caption(token) and "a bound" in _caption(token)
    timed = [Curve("w", p, None, [(10, 0.2)], "m", [(10, 5.0)]) for p in ("lru", "oracle")]
    table = curve_table(timed, "w", 0.5, point="m")
    assert ORACLE_TIMED_NAME in [str(c) for c in table.columns[0]._cells]
    assert "not a bound" in _caption(table) and "offline bound" not in _caption(table)


def test_the_host_table_calls_only_the_token_ceiling_s_total_a_bound() -> None:
    line = HostCurve("w", "lru", None, "write_back", 100, 1, [(0, 0.1), (50, 0.2)],
                     [(0, 0.1), (50, 0.15)])
    token = _caption(host_curve_table([line], 0.5))
    assert "in total (device + host): a bound" in token
    assert "Belady on the device" not in token and "oracle" not in token
    timed = HostCurve("w", "lru", None, "write_back", 100, 1, [(0, 0.1), (50, 0.2)],
                      [(0, 0.1), (50, 0.15)], "m", [(0, 5.0), (50, 4.0)])
    assert "not a proven bound" in _caption(host_curve_table([timed], 0.5))


class _Ax:
    def __init__(self) -> None:
        self.labels: list[str] = []

    def plot(self, *_a: Any, label: str = "", **_k: Any) -> None:
        self.labels.append(label)


def test_the_plot_names_the_oracle_line_by_its_replay() -> None:
    ax = _Ax()
    _line(ax, Curve("w", "oracle", None, [(10, 0.3)]), [(10, 0.3)])
    _line(ax, Curve("w", "oracle", None, [(10, 0.3)], "m", [(10, 5.0)]), [(10, 5.0)])
    assert ax.labels == [ORACLE_NAME, ORACLE_TIMED_NAME]


def test_the_rows_table_says_what_its_reference_rows_are() -> None:
    def row(policy: str, timed: bool) -> dict[str, Any]:
        return {"workload": "chat", "seed": 0, "policy": policy, "config": None,
                "pool_tokens": 100, "page_size": 1, "status": "ok", "hit_rate": 0.5,
                "p50_uncached": 1.0, "p90_uncached": 1.0, "p99_uncached": 1.0,
                "evicted_tokens": 0, "replay_s": 0.1,
                **({"cost_model": "m", "ttft_p99_ms": 5.0} if timed else {})}

    timed = _caption(rows_table([row("lru", True), row("oracle", True)], "t"))
    assert timed.startswith("oracle = Belady's rule") and "not a bound" in timed
    both = _caption(rows_table([row("oracle", False), row("oracle", True)], "t"))
    assert "token replay: oracle = offline bound" in both and "timed: oracle = Belady" in both
    assert rows_table([row("lru", False)], "t").caption is None
