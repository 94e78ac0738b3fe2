"""The figure tables in docs/choosing.md and docs/quickstart.md, from results.json.

Each page holds ``<!-- generated:NAME -->`` sections; everything between a
section's markers is rewritten from the measured results, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .common import DOCS, apply_sections, as_json, code, md_cell, run_name

QUICKSTART_PAGE = DOCS / "quickstart.md"
CHOOSING_PAGE = DOCS / "choosing.md"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _tokens(x: float) -> str:
    return f"{x:,.0f}"



def _config_text(r: Mapping[str, Any]) -> str:
    cfg = r.get("policy_config")
    if not cfg:
        return "-"
    text = ", ".join(f"{k}={v}" for k, v in cfg.items())
    return f"{text} (derived)" if r.get("config_source") == "workload-suggested" else text


def policy_rows(sim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The results of servable policies (the oracle row is a reference, never one)."""
    return [r for r in sim["results"] if r["policy"] != "oracle"]


def _oracle_row(sim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((r for r in sim["results"] if r["policy"] == "oracle"), None)


def _gap(r: Mapping[str, Any]) -> str:
    g = r.get("gap_closed")
    return "-" if g is None else f"{100 * g:.0f}%"


def _best(res: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(res, key=lambda r: (r["hit_rate"], -r["p99_uncached"]))


def policy_table(sim: Mapping[str, Any]) -> list[str]:
    """One run's results in the columns `radix-evict simulate` prints (and the bound)."""
    res = policy_rows(sim)
    best = _best(res)["label"]
    rec = sim["recommendation"]["policy"]
    oracle = _oracle_row(sim)
    out = [
        "| policy | config | hit rate | gap closed | p50 uncached | p90 uncached | "
        "p99 uncached | evicted tokens |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for r in [*res, *([oracle] if oracle is not None else [])]:
        name = r["label"] + (" *" if r["label"] == rec else "")
        rate = _pct(r["hit_rate"])
        rate = f"**{rate}**" if r["label"] == best else rate
        if r is oracle:
            name, rate = "*oracle (offline bound)*", f"*{rate}*"
        out.append(
            f"| {name} | {md_cell(_config_text(r))} | {rate} | {_gap(r)} | "
            f"{_tokens(r['p50_uncached'])} | {_tokens(r['p90_uncached'])} | "
            f"{_tokens(r['p99_uncached'])} | {r['evicted_tokens']:,} |"
        )
    out += ["", "Bold: highest hit rate of a servable policy. `*`: what simulate recommends."]
    if "ceiling" in sim:
        out[-1] += (f" The oracle is Belady's offline bound, a reference no server can run; "
                    f"gap closed is each policy's share of the lru-to-oracle gap. An "
                    f"infinite pool would hit {_pct(sim['ceiling']['hit_rate'])}.")
    return out


def _settings_table(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    out = [
        "| run | requests | pool (tokens) | page size | policies | command |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for run in runs:
        sim = run["simulate"]
        res = policy_rows(sim)
        n = res[0]["requests"] if res else 0
        out.append(
            f"| {run['title']} | {n:,} | {sim['pool_tokens']:,} | {sim['page_size']} | "
            f"{len(res)} | {code(run['command'])} |"
        )
    return out


def _pivot(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    policies: list[str] = []
    for run in runs:
        for r in policy_rows(run["simulate"]):
            if r["label"] not in policies:
                policies.append(r["label"])
    head = "| policy | " + " | ".join(run_name(run) for run in runs) + " |"
    out = [head, "|---|" + "--:|" * len(runs)]
    bests = [_best(policy_rows(run["simulate"]))["label"] for run in runs]
    for p in policies:
        cells = []
        for run, best in zip(runs, bests, strict=True):
            r = next((x for x in policy_rows(run["simulate"]) if x["label"] == p), None)
            if r is None:
                cells.append("-")
                continue
            text = _pct(r["hit_rate"])
            cells.append(f"**{text}**" if p == best else text)
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    oracles = [_oracle_row(run["simulate"]) for run in runs]
    if any(o is not None for o in oracles):
        out.append("| *oracle (offline bound)* | " + " | ".join(
            "-" if o is None else f"*{_pct(o['hit_rate'])}*" for o in oracles) + " |")
    ceilings = [run["simulate"].get("ceiling") for run in runs]
    if any(c is not None for c in ceilings):
        out.append("| *ceiling (infinite pool)* | " + " | ".join(
            "-" if c is None else f"*{_pct(c['hit_rate'])}*" for c in ceilings) + " |")
    return out


def lru_verdict(run: Mapping[str, Any]) -> str:
    """One plain sentence: does LRU win this run, and by how much or to whom does it lose."""
    res = policy_rows(run["simulate"])
    name = run_name(run)
    lru = next((r for r in res if r["label"] == "lru"), None)
    best = _best(res)
    if lru is None:
        return f"- **{name}**: lru was not run."
    return _hit_verdict(name, res, lru, best) + _tail_verdict(res, lru)


def _tail_verdict(res: Sequence[Mapping[str, Any]], lru: Mapping[str, Any]) -> str:
    low = min(res, key=lambda r: (r["p99_uncached"], -r["hit_rate"]))
    if low is lru or low["p99_uncached"] >= lru["p99_uncached"]:
        return " lru also has the lowest p99 uncached."
    return (f" Lowest p99 uncached: {low['label']}, {_tokens(low['p99_uncached'])} tokens "
            f"per request vs lru's {_tokens(lru['p99_uncached'])}.")


def _hit_verdict(name: str, res: Sequence[Mapping[str, Any]], lru: Mapping[str, Any],
                 best: Mapping[str, Any]) -> str:
    others = sorted((r for r in res if r is not lru), key=lambda r: -r["hit_rate"])
    if best is lru:
        runner = others[0] if others else None
        gap = 100 * (lru["hit_rate"] - runner["hit_rate"]) if runner else 0.0
        worst = others[-1] if others else None
        tail = (f"; {worst['label']} is furthest behind at {_pct(worst['hit_rate'])}"
                if worst is not None and worst is not runner else "")
        return (f"- **{name}: LRU wins.** Highest hit rate, {_pct(lru['hit_rate'])}, "
                f"{gap:.1f} points ahead of {runner['label'] if runner else '-'} "
                f"({_pct(runner['hit_rate']) if runner else '-'}){tail}.")
    gap = 100 * (best["hit_rate"] - lru["hit_rate"])
    return (f"- **{name}: LRU does not win.** {best['label']} has the highest hit rate, "
            f"{_pct(best['hit_rate'])}, {gap:.1f} points above lru's "
            f"{_pct(lru['hit_rate'])}.")


DERIVED_SUFFIX = "_derived"  # simulate --json: NAME_derived for each policy that derives its config


def derived_policies(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Policies whose config simulate derived in at least one run, in the JSON's order."""
    names: list[str] = []
    for run in runs:
        for key, value in run["simulate"].items():
            name = key[: -len(DERIVED_SUFFIX)]
            if key.endswith(DERIVED_SUFFIX) and value and name not in names:
                names.append(name)
    return names


def _derived_line(run: Mapping[str, Any], policy: str) -> str | None:
    derived = run["simulate"].get(policy + DERIVED_SUFFIX) or {}
    if not derived:
        return None
    (_, info), *_ = derived.items()
    growth = info.get("mean_growth")
    why = f", from a mean next-turn growth of {growth:,.1f} tokens" if growth is not None else ""
    return f"- {run_name(run)}: {code(as_json(info['config']))}{why}."


def choosing_sections(results: Mapping[str, Any]) -> dict[str, str]:
    """The generated parts of docs/choosing.md."""
    runs = results["runs"]
    settings = [
        f"Measured with radix-evict {results['radix_evict_version']} by "
        f"{code(results['generated_by'])}; the raw JSON is "
        "[`figures/results.json`](figures/results.json).",
    ]
    if results.get("trace_limit"):
        settings += ["", f"The traces were cut to their first {results['trace_limit']:,} "
                     "requests (`--trace-limit`)."]
    settings += ["", *_settings_table(runs)]
    for policy in derived_policies(runs):
        lines = [line for line in (_derived_line(r, policy) for r in runs) if line]
        settings += ["", f"{policy} ran with the config simulate derives from each workload "
                     "when none is given:", "", *lines]
    tables: list[str] = []
    for run in runs:
        sim = run["simulate"]
        tables += [f"### {run['title']}", "", *policy_table(sim), "",
                   f"simulate's recommendation: **{sim['recommendation']['policy']}**: "
                   f"{sim['recommendation']['reason']}.", ""]
    rule = runs[0]["simulate"]["recommendation"].get("rule", "") if runs else ""
    if rule:
        tables += [f"Recommendation rule: {rule}."]
    return {
        "settings": "\n".join(settings),
        "hit-rates": "\n".join(_pivot(runs)),
        "lru-verdict": "\n".join(lru_verdict(r) for r in runs),
        "tables": "\n".join(tables).rstrip(),
        "timed-verdict": "\n".join(timed_verdict(results.get("timed"))),
    }


def timed_verdict(timed: Mapping[str, Any] | None) -> list[str]:
    """The timed replay's table (hit rate next to TTFT) and what each objective picks."""
    if not timed:
        return ["(not measured: run `python docs/generate.py figures --timed-only`)"]
    sim = timed["simulate"]
    res = sim["results"]
    lru = next((r for r in res if r["policy"] == "lru"), res[0])
    lines = [f"{code(timed['command'])}", "",
             "| policy | hit rate | TTFT p50 | TTFT p90 | TTFT p99 | p99 vs lru |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in res:
        t = r["ttft_ms"]
        vs = t["p99"] / lru["ttft_ms"]["p99"] - 1 if lru["ttft_ms"]["p99"] else 0.0
        lines.append(f"| {r['label']} | {_pct(r['hit_rate'])} | {t['p50']:,.0f} ms | "
                     f"{t['p90']:,.0f} ms | {t['p99']:,.0f} ms | {100 * vs:+.1f}% |")
    by_hits = max(res, key=lambda r: r["hit_rate"])["label"]
    by_ttft = min(res, key=lambda r: r["ttft_ms"]["p99"])["label"]
    agree = "the two rankings agree" if by_hits == by_ttft else "the two rankings disagree"
    lines += ["", f"Ranked by hit rate: **{by_hits}**; ranked by p99 TTFT: **{by_ttft}**: "
              f"{agree}. simulate's recommendation ({sim['objective']}): "
              f"{sim['recommendation']['reason']}."]
    return lines


def quickstart_sections(results: Mapping[str, Any]) -> dict[str, str]:
    """The generated parts of docs/quickstart.md: the default run's table."""
    run = next(r for r in results["runs"] if r["key"] == "chat")
    sim = run["simulate"]
    res = policy_rows(sim)
    wl = sim.get("workload") or {}
    head = (f"`radix-evict simulate` on {wl.get('name', 'chat')}: "
            f"{res[0]['requests']:,} requests, pool {sim['pool_tokens']:,} tokens, "
            f"page {sim['page_size']}, policies {', '.join(sim['policies'])}.")
    rec = sim["recommendation"]
    body = [head, "", *policy_table(sim), "",
            f"Recommendation: run {rec['policy']}: {rec['reason']}."]
    if rec.get("rule"):
        body += ["", f"The rule: {rec['rule']}."]
    return {"chat-table": "\n".join(body)}



def table_pages(results: Mapping[str, Any]) -> dict[Path, str]:
    """Every page with generated tables, as it should read for ``results``."""
    return {
        CHOOSING_PAGE: apply_sections(CHOOSING_PAGE.read_text(encoding="utf-8"),
                                      choosing_sections(results), CHOOSING_PAGE.name),
        QUICKSTART_PAGE: apply_sections(QUICKSTART_PAGE.read_text(encoding="utf-8"),
                                        quickstart_sections(results), QUICKSTART_PAGE.name),
    }

