"""The Sweeps page's figure: one real sweep, its rows, its curve plot and the table in the page.

``python docs/generate.py sweep-figure`` runs :data:`COMMAND` (a
``radix-evict sweep`` of the Mooncake conversation trace, with the oracle
and the ceiling), keeping its rows in ``docs/figures/sweep-rows.jsonl`` and
its plot in ``docs/figures/sweep-curve.png``; the table in docs/sweeps.md is
rendered from those rows (``tables`` and ``all --check`` keep it in step).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from gen.common import DOCS, ROOT, apply_sections, md_cell
from gen.figures import TRACES

PAGE = DOCS / "sweeps.md"
ROWS = DOCS / "figures" / "sweep-rows.jsonl"
PLOT = DOCS / "figures" / "sweep-curve.png"
TRACE = f"{TRACES}/mooncake_conversation_trace.jsonl"
ARGS = ["sweep", "-p", "lru,lfu,slru,tlru", "-g", "slru.protected_threshold=1,2,4",
        "--pool-tokens", "500K..32M*2", "--page-size", "512", "--trace", TRACE, "--oracle"]
COMMAND = "radix-evict " + shlex.join(ARGS)


def measure() -> None:
    """Run the sweep afresh, from where the relative trace path resolves.

    That is the repository root; a worktree (``/work/wt/<branch>``) sits one
    level deeper, so its parent is tried too. The rows name the trace as given.
    """
    ROWS.unlink(missing_ok=True)
    exe = Path(sys.executable).parent / "radix-evict"
    cwd = next((d for d in (ROOT, ROOT.parent) if (d / TRACE).exists()), ROOT)
    # --force: the committed plot is the docs' own, whichever version drew it
    cmd = [str(exe), *ARGS, "--out", str(ROWS), "--plot", str(PLOT), "--force", "--no-progress"]
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def replot() -> None:
    """Draw the plot again from the committed rows (as the sweep's --plot draws it)."""
    from radix_evict.outputs import OutputFile
    from radix_evict.sim.sweep.draw import plot_curves
    from radix_evict.sim.sweep.plots import TITLE
    from radix_evict.sim.sweep.summary import ceilings, curves

    rows = load_rows()
    plot_curves(OutputFile("--plot", PLOT, "plot", force=True), curves(rows), TITLE,
                ceilings(rows))


def load_rows(path: Path = ROWS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def section(rows: list[dict[str, Any]]) -> str:
    """The generated part of docs/sweeps.md: the command, the figure, the curves as a table."""
    from radix_evict.sim.sweep.summary import best_configs, ceilings, config_text, curves

    cs, tops, best = curves(rows), ceilings(rows), best_configs(rows)
    pools = sorted({p for c in cs for p, _ in c.points})
    lines = [f"`{COMMAND}` ({len(rows)} cells):", "",
             "![Hit rate over pool size on the Mooncake conversation trace]"
             "(figures/sweep-curve.png)", "",
             "| policy | best config | " + " | ".join(f"{p:,}" for p in pools) + " |",
             "|---|---|" + "--:|" * len(pools)]
    for c in cs:
        at = dict(c.points)
        lines.append(f"| {c.policy} | {md_cell(config_text(c.config))} | "
                     + " | ".join(_pct(at[p]) if p in at else "-" for p in pools) + " |")
    for top in tops.values():
        lines.append("| ceiling | infinite pool | " + " | ".join(_pct(top) for _ in pools) + " |")
    lines += ["", "Columns: pool size in tokens (whole 512-token pages). Each policy is shown "
              "at its best config (mean hit rate over the pool sizes): "
              + "; ".join(f"{b.policy} {md_cell(config_text(b.config))}" for b in best) + "."]
    return "\n".join(lines)


def page() -> dict[Path, str]:
    """docs/sweeps.md as it should read for the committed rows."""
    text = PAGE.read_text(encoding="utf-8")
    return {PAGE: apply_sections(text, {"sweep-figure": section(load_rows())}, PAGE.name)}
