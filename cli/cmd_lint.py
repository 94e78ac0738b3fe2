"""``radix-evict lint FILE...``: check SGLang and vLLM launch configs in CI or as a pre-commit
hook."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import output
from .codes import OUTCOME_CODES
from .errors import EXIT_OK, EXIT_USAGE, mark_json

FilesArg = Annotated[list[Path], typer.Argument(
    help="Files or folders: Kubernetes/compose/Helm YAML, JSON, TOML, SGLang --config YAML, "
         "shell scripts, Dockerfiles.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
FormatOpt = Annotated[str, typer.Option(
    "--format", help="text, json, github (workflow annotations) or sarif (code scanning).")]
StrictOpt = Annotated[bool, typer.Option(
    "--strict", help="Warnings fail too (what radix-evict knows beyond SGLang's own checks).")]
OpenFilesOpt = Annotated[bool, typer.Option(
    "--open-files", help="Also open the files a policy config names (a learned policy's "
                         "weights) and check them, as the launch would: only where those paths "
                         "are this machine's. Without it, only the paths' form is checked.")]


def lint(
    ctx: typer.Context,
    files: FilesArg,
    json_out: JsonOpt = False,
    fmt: FormatOpt = "text",
    strict: StrictOpt = False,
    open_files: OpenFilesOpt = False,
) -> None:
    """Check SGLang's --radix-eviction-policy and --radix-eviction-policy-config, and vLLM's
    CPU offload policy in --kv-transfer-config, wherever set.

    Fails a file exactly when SGLang 0.5.23 (or vLLM 0.33.0) would refuse to start (or fail)
    with its eviction settings; every problem is reported at file:line:column.
    """
    # here, not at import: yaml and tomllib only lint needs
    from radix_evict.lint import formats as render
    from radix_evict.lint import lint_paths

    fmt = "json" if json_out else fmt.lower()
    mark_json(ctx.obj, fmt == "json")
    if fmt not in render.FORMATS:
        output.error(f"--format must be one of {', '.join(render.FORMATS)}, got {fmt!r}")
        raise typer.Exit(EXIT_USAGE)
    report = lint_paths(files, strict=strict, open_files=open_files)
    code = OUTCOME_CODES[report.outcome]
    if fmt == "json":
        output.emit_json(render.json_report(report))
    elif fmt == "sarif":
        from radix_evict import __version__

        output.emit_json(render.sarif(report, __version__))
    elif fmt == "github":
        out = output.stdout()
        for line in render.github_lines(report):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        output.stderr().print(render.summary(report), markup=False, highlight=False)
    else:
        err = output.stderr()
        for line in render.text_lines(report):
            err.print(line, markup=False, highlight=False, soft_wrap=True)
        where = output.stdout() if code == EXIT_OK else err
        where.print(render.summary(report), markup=False, highlight=False)
    if code != EXIT_OK:
        raise typer.Exit(code)
