"""``radix-evict lint FILE...``: check serving configs in CI or as a pre-commit hook."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import output
from .errors import EXIT_OK, mark_json

FilesArg = Annotated[list[Path], typer.Argument(
    help="Serving config files (YAML, JSON or TOML) using SGLang's argument names.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def lint(
    ctx: typer.Context,
    files: FilesArg,
    json_out: JsonOpt = False,
) -> None:
    """Check radix-eviction-policy / radix-eviction-policy-config in serving config files.

    Every problem is reported with its file and key path. Files that set no
    policy pass; a config without a policy is checked against lru (SGLang's default).
    """
    from .lint_files import lint_files  # here, not at import: yaml and tomllib only lint needs

    mark_json(ctx.obj, json_out)
    report = lint_files(files)
    if json_out:
        output.emit_json(report.to_dict())
    else:
        err = output.stderr()
        for p in report.problems:
            err.print(str(p), markup=False, highlight=False)
        n = len(report.problems)
        if n:
            err.print(f"{n} problem{'s' if n != 1 else ''} in {report.files} file"
                      f"{'s' if report.files != 1 else ''}", markup=False, highlight=False)
        else:
            output.stdout().print(f"OK: {report.files} file{'s' if report.files != 1 else ''}"
                                  " checked", markup=False, highlight=False)
    if report.code != EXIT_OK:
        raise typer.Exit(report.code)
