"""The sweep's per-cell table names a trace by its file name: one line per cell."""

from __future__ import annotations

from rich.console import Console

from radix_evict.cli.sweep_report import cell_workload, rows_table

LONG = "/a/very/long/folder/that/goes/on/and/on/and/on/traces/mooncake_conversation_trace.jsonl"


def _row(workload: str, params: dict[str, int] | None = None) -> dict[str, object]:
    return {"workload": workload, "params": params or {}, "seed": 0, "policy": "lru",
            "config": None, "pool_tokens": 1_000_000, "page_size": 512, "status": "ok",
            "hit_rate": 0.5, "p50_uncached": 1.0, "p90_uncached": 2.0, "p99_uncached": 3.0,
            "evicted_tokens": 10, "replay_s": 0.1}


def test_a_trace_is_named_by_its_file() -> None:
    assert cell_workload(_row(LONG)) == "mooncake_conversation_trace.jsonl"
    assert cell_workload(_row(LONG, {"limit": 300})) == \
        'mooncake_conversation_trace.jsonl{"limit":300}'
    assert cell_workload(_row("chat", {"convs": 50})) == 'chat{"convs":50}'


def test_each_cell_is_one_line() -> None:
    console = Console(width=200, record=True)
    console.print(rows_table([_row(LONG), _row(LONG)], "cells"))
    lines = [ln for ln in console.export_text().splitlines() if "lru" in ln]
    assert len(lines) == 2 and "mooncake_conversation_trace.jsonl" in lines[0]
    assert "/a/very" not in console.export_text()
