#!/usr/bin/env python3
"""Regenerate the documentation's generated parts from the code and from measured runs.

Subcommands (run from anywhere; paths are relative to the repository root):

    python docs/generate.py policies   # docs/reference/policies.md from the policy registry
    python docs/generate.py cli        # docs/reference/cli.md from the typer app
    python docs/generate.py tables     # figure tables in the pages, from docs/figures/results.json
    python docs/generate.py figures    # run `radix-evict simulate --json`, write results.json,
                                       # the plot docs/figures/policies.png, then the tables
    python docs/generate.py sweep-figure  # run the Sweeps page's sweep: its rows, plot, table
    python docs/generate.py results    # docs/results.md's tables, from docs/results/rows.jsonl
    python docs/generate.py results --measure  # run its sweep first (minutes on 2 cores)
    python docs/generate.py results --measure --resume  # only the cells rows.jsonl lacks
    python docs/generate.py architecture  # docs/architecture.md's import graph, from the code
    python docs/generate.py all        # policies, cli, tables, results and architecture
                                       # (the fast ones: nothing is measured)

``--check`` (with policies, cli, tables, results or all) writes nothing and exits 1 when
a committed page differs from what would be generated. tests/project/test_docs.py
makes the same comparison in-process.

The reference pages show only radix-evict's own (built-in) policies, whatever
plugin packages are installed, and the figures are measured with
``RADIX_EVICT_PLUGINS=""`` for the same reason.

Each job lives in its own module of ``docs/gen/``: ``references.py`` (the
policy and CLI reference pages), ``figures.py`` (the measured runs, results.json,
the plot), ``tables.py`` (the figure tables in the pages), ``sweeps.py`` (the
Sweeps page's figure) and ``results.py`` (the results page, from one sweep);
``common.py`` holds what they share. This file only parses the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # docs/: makes docs/gen importable

from gen import architecture, figures, references, sweeps, tables
from gen import results as results_page
from gen.common import ROOT, write_if_changed, write_text


def expected_pages(what: str) -> dict[Path, str]:
    """Path -> generated text for ``policies``, ``cli``, ``tables``, ``results`` or ``all``."""
    pages: dict[Path, str] = {}
    if what in ("policies", "all"):
        pages[references.POLICIES_PAGE] = references.render_policies()
    if what in ("cli", "all"):
        pages[references.CLI_PAGE] = references.render_cli()
    if what in ("tables", "all"):
        pages.update(tables.table_pages(figures.load_results()))
        pages.update(sweeps.page())
    if what in ("results", "all"):
        pages.update(results_page.page())
    if what in ("architecture", "all"):
        pages[architecture.PAGE] = architecture.page()
    return pages


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("policies", "cli", "tables", "results", "architecture", "all"):
        p = sub.add_parser(name)
        p.add_argument("--check", action="store_true",
                       help="write nothing; exit 1 if a committed page is out of date")
        if name == "results":
            p.add_argument("--measure", action="store_true",
                           help="run the results sweep afresh first (docs/results/rows.jsonl)")
            p.add_argument("--resume", action="store_true",
                           help="with --measure: start from the committed rows, run only "
                                "the cells they lack")
    fig = sub.add_parser("figures", help="measure, then write results.json, the plot, tables")
    fig.add_argument("--trace-limit", type=int, default=0,
                     help="replay only the first N requests of each trace (0 = all)")
    fig.add_argument("--plot-only", action="store_true",
                     help="redraw the plot and tables from the existing results.json")
    fig.add_argument("--timed-only", action="store_true",
                     help="re-measure only the timed verdict's run into results.json")
    swp = sub.add_parser("sweep-figure", help="run the Sweeps page's sweep: rows, plot, table")
    swp.add_argument("--plot-only", action="store_true",
                     help="redraw the plot and the table from the committed rows")
    args = parser.parse_args(argv)
    if args.what == "sweep-figure":
        if args.plot_only:
            sweeps.replot()
        else:
            t0 = time.perf_counter()
            sweeps.measure()
            print(f"measured in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for path, text in sweeps.page().items():
            write_if_changed(path, text)
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
        return 0
    if args.what == "figures":
        if args.plot_only:
            results = figures.load_results()
        elif args.timed_only:
            results = figures.load_results()
            results["timed"] = figures.measure_timed()
            write_text(figures.RESULTS, json.dumps(results, indent=1) + "\n")
            print(f"wrote {figures.RESULTS.relative_to(ROOT)}", file=sys.stderr)
        else:
            t0 = time.perf_counter()
            results = figures.measure(args.trace_limit)
            print(f"measured in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            figures.RESULTS.parent.mkdir(parents=True, exist_ok=True)
            write_text(figures.RESULTS, json.dumps(results, indent=1) + "\n")
            print(f"wrote {figures.RESULTS.relative_to(ROOT)}", file=sys.stderr)
        figures.plot_results(results)
        print(f"wrote {figures.PLOT.relative_to(ROOT)}", file=sys.stderr)
        for path, text in tables.table_pages(results).items():
            if write_if_changed(path, text):
                print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
        return 0
    if args.what == "results" and args.resume and not args.measure:
        parser.error("results: --resume goes with --measure")
    if args.what == "results" and args.measure:
        if args.check:
            parser.error("results: --measure and --check do not go together")
        _, wall = results_page.measure(resume=args.resume)
        print(f"measured in {wall:.1f} s: {results_page.ROWS.relative_to(ROOT)}, "
              f"{results_page.META.relative_to(ROOT)}", file=sys.stderr)
    stale = []
    for path, text in expected_pages(args.what).items():
        rel = path.relative_to(ROOT)
        if args.check:
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current != text:
                stale.append(str(rel))
        elif write_if_changed(path, text):
            print(f"wrote {rel}", file=sys.stderr)
        else:
            print(f"{rel} is up to date", file=sys.stderr)
    if stale:
        print("out of date (run python docs/generate.py all): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
