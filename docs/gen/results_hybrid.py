"""The results page's hybrid-model section: the results sweep's hybrid cells (docs/hybrid.md).

A hybrid cell of docs/results/sweep.toml replays a trace through one model's
hybrid cache (``model_arch`` set in its row) at a KV budget in bytes, split
between the model's components by the ratio of its kind. The section has one
table per workload and budget: model, split (with the pools it bought), policy,
reusable and full-KV hit rates, p99 and p50 TTFT; and one line per model
naming the setting that wins: the lowest p99 TTFT, ties broken by the highest
reusable hit rate. Nothing here is a figure typed in: change the rows and the
sentences change with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radix_evict.sim.sweep.schema import is_hybrid

Row = dict[str, Any]
HYBRID_PAGE = "hybrid.md"  # the hybrid-models page, relative to docs/results.md


def hybrid_rows(rows: Sequence[Row]) -> list[Row]:
    """The hybrid cells that ran, in the rows' (the grid's) order."""
    return [r for r in rows if is_hybrid(r) and r["status"] == "ok"]


def split_text(row: Row) -> str:
    """``window 0.25 (932,064 + 233,008 window tokens)``: the ratio and the pools it bought."""
    full = f"{row['full_pool_tokens']:,}"
    if row.get("swa_full_tokens_ratio") is not None:
        return (f"window/full tokens {row['swa_full_tokens_ratio']:g} ({full} + "
                f"{row['swa_pool_tokens']:,} window tokens)")
    if row.get("mamba_full_memory_ratio") is not None:
        return (f"Mamba/full memory {row['mamba_full_memory_ratio']:g} ({full} tokens + "
                f"{row['mamba_states']:,} states)")
    return f"full attention ({full} tokens)"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _s(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f}"


def rank(row: Row) -> tuple[float, float]:
    """What the winner is chosen by: the lowest p99 TTFT, then the highest reusable hit rate."""
    return (row["ttft_p99_ms"], -row["hit_rate"])


def winners(rows: Sequence[Row]) -> list[Row]:
    """The rows that rank first (several where they tie on both figures)."""
    best = min(rank(r) for r in rows)
    return [r for r in rows if rank(r) == best]


def model_table(rows: Sequence[Row]) -> list[str]:
    """The rows, a line each, a model named on its first line and a split on its own first
    line; **bold**: each model's winning setting."""
    models = list(dict.fromkeys(r["model_arch"] for r in rows))
    won = {r["cell"] for m in models for r in winners([x for x in rows if x["model_arch"] == m])}
    lines = ["| model | split (pools) | policy | reusable hit rate | full-KV hit rate | "
             "p99 TTFT s | p50 TTFT s |", "|---|---|---|--:|--:|--:|--:|"]
    seen: set[str] = set()
    for r in rows:
        split = split_text(r)
        model = "" if r["model_arch"] in seen else f"`{r['model_arch']}`"
        named = "" if f"{r['model_arch']} {split}" in seen else split
        seen |= {r["model_arch"], f"{r['model_arch']} {split}"}
        p99 = _s(r["ttft_p99_ms"])
        lines.append(f"| {model} | {named} | {r['policy']} | {_pct(r['hit_rate'])} | "
                     f"{_pct(r['full_hit_rate'])} | "
                     f"{f'**{p99}**' if r['cell'] in won else p99} | "
                     f"{_s(r.get('ttft_p50_ms'))} |")
    return lines


def winner_line(rows: Sequence[Row]) -> str:
    """``- gpt-oss-120b: lfu or slru at window/full tokens 0.25 ...``: the model's winner."""
    best = winners(rows)
    by_split: dict[str, list[str]] = {}
    for b in best:
        by_split.setdefault(split_text(b).split(" (")[0], []).append(b["policy"])
    settings = " or ".join(f"{' or '.join(names)} at {split}"
                           for split, names in by_split.items())
    r = best[0]
    lru = [x for x in rows if x["policy"] == "lru" and split_text(x) == split_text(r)]
    against = (f"; lru at the same split: {_pct(lru[0]['hit_rate'])}, "
               f"{_s(lru[0]['ttft_p99_ms'])} s" if lru and r["policy"] != "lru" else "")
    return (f"- `{r['model_arch']}`: {settings}, reusable hit rate {_pct(r['hit_rate'])} at "
            f"p99 TTFT {_s(r['ttft_p99_ms'])} s{against}.")


def section(rows: Sequence[Row], title: Any) -> list[str]:
    """The hybrid section (empty without hybrid rows); ``title(workload)`` names a workload as
    the page's other tables do."""
    hybrid = hybrid_rows(rows)
    if not hybrid:
        return []
    out = ["## Hybrid models", "",
           f"The hybrid cells: each a timed replay of a workload through one model's hybrid "
           f"cache ([Hybrid models]({HYBRID_PAGE}): sliding-window and Mamba state kept as "
           f"SGLang's unified radix cache keeps them), every model at the same KV memory, "
           f"split between its components by the ratio given. *Reusable hit rate* is the "
           f"share of prompt tokens served from a prefix at which every component the model "
           f"needs is present; *full-KV hit rate* counts full-attention KV alone. Prefill is "
           f"charged per component. **Bold**: the model's winning setting, the lowest p99 "
           f"TTFT, ties broken by the highest reusable hit rate.", ""]
    groups: dict[tuple[str, str | None], list[Row]] = {}
    for r in hybrid:  # a workload at one budget: one table
        groups.setdefault((r["workload"], r.get("kv_memory")), []).append(r)
    for (name, kv), mine in groups.items():
        models = list(dict.fromkeys(r["model_arch"] for r in mine))
        out += [f"### {title(name)}: hybrid models", "",
                f"{mine[0]['requests']:,} requests; {kv or 'the pool given'} of KV per model, "
                f"page size {mine[0]['page_size']}; cost model `{mine[0]['cost_model']}`.", ""]
        out += [*model_table(mine), "", "The setting that wins for each model:", "",
                *(winner_line([r for r in mine if r["model_arch"] == m]) for m in models), ""]
    return out
