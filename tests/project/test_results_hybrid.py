"""The results page's hybrid-model section comes from the sweep's hybrid rows
(docs/gen/results_hybrid.py).

The hybrid cells (one model's hybrid cache at a KV budget and split) have
their own table, stay out of the single-server tables, and the line naming
each model's winning setting follows the rows: edit a figure and it changes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import results, results_hybrid  # noqa: E402

Row = dict[str, Any]
POLICIES = ("lru", "lfu", "slru", "priority")


def _hybrid() -> list[Row]:
    return results_hybrid.hybrid_rows(results.load_rows())


def test_the_sweep_has_every_model_split_and_policy_at_one_budget() -> None:
    rows = _hybrid()
    splits = {(r["model_arch"], r["swa_full_tokens_ratio"], r["mamba_full_memory_ratio"])
              for r in rows}
    assert splits == ({("gpt-oss-120b", s, None) for s in (0.25, 0.5, 0.8, 1.0)}
                      | {("qwen3-next-80b-a3b", None, m) for m in (0.3, 0.9, 2.0, 4.0)}
                      | {("llama-3-8b", None, None)})
    assert {(r["model_arch"], r["policy"]) for r in rows} == {
        (m, p) for m, _, _ in splits for p in POLICIES}
    assert all(r["kv_memory"] == "40GiB" and r["workload"].endswith(results.CONVERSATION)
               and r["ttft_p99_ms"] > 0 and r["full_hit_rate"] >= r["hit_rate"] for r in rows)


def test_the_page_shows_every_hybrid_row() -> None:
    part = results.PAGE.read_text(encoding="utf-8").split("## Hybrid models")[1]
    lines = part.splitlines()
    for r in _hybrid():
        hit, full = f"{100 * r['hit_rate']:.2f}%", f"{100 * r['full_hit_rate']:.2f}%"
        p99 = f"{r['ttft_p99_ms'] / 1000:.2f}"
        assert any(f"| {r['policy']} | {hit} | {full} | " in ln and p99 in ln for ln in lines), r
    assert "](hybrid.md" in part
    for model in ("gpt-oss-120b", "qwen3-next-80b-a3b", "llama-3-8b"):
        assert any(ln.startswith(f"- `{model}`: ") for ln in lines), model


def test_hybrid_rows_stay_out_of_the_single_server_tables() -> None:
    rows = results.load_rows()
    assert all(w.page_size != 16 for w in results.workloads(rows)
               if w.name.endswith(results.CONVERSATION))
    f = results.Figures(rows)
    assert not {k for k in f.ttft if k[2] is None and k[0].endswith(results.CONVERSATION)}


def test_the_winner_follows_the_rows() -> None:
    rows = [r for r in _hybrid() if r["model_arch"] == "gpt-oss-120b"]
    best = results_hybrid.winners(rows)
    assert all(results_hybrid.rank(b) <= results_hybrid.rank(r) for b in best for r in rows)
    worst = max(rows, key=results_hybrid.rank)  # made the fastest: it must now win alone
    edited = [dict(r, ttft_p99_ms=1.0) if r is worst else r for r in rows]
    assert results_hybrid.winners(edited) == [dict(worst, ttft_p99_ms=1.0)]
    line = results_hybrid.winner_line(edited)
    assert line.startswith(f"- `gpt-oss-120b`: {worst['policy']} at window/full tokens "
                           f"{worst['swa_full_tokens_ratio']:g}, ")
    assert "p99 TTFT 0.00 s" in line
