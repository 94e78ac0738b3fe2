"""The typer application: global flags, error mapping, and the command list.

Commands live in their own modules (``cmd_*.py``); this module only wires
them. Importing it loads no policy plugin: choices are computed when a
command or its ``--help`` runs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from radix_evict import __version__

from . import (
    cmd_calibrate,
    cmd_lint,
    cmd_list,
    cmd_plan,
    cmd_routers,
    cmd_schema,
    cmd_sglang,
    cmd_show,
    cmd_simulate,
    cmd_sweep,
    cmd_validate,
    cmd_vllm,
    output,
)
from .codes import EXIT_CLOSED_PIPE
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED, CliState, emit_error_json, report


def _click_exception() -> type[Exception]:
    """click's ClickException, wherever this typer takes click from (newer typers vendor it)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


# Exceptions the framework itself handles: usage errors (exit 2), --help, Ctrl-C, typer.Exit.
FRAMEWORK_EXCEPTIONS: tuple[type[BaseException], ...] = (typer.Exit, typer.Abort,
                                                        _click_exception())


class GuardedGroup(TyperGroup):
    """Runs subcommands and maps anything they raise to a message and an exit code.

    Ctrl-C is one line and exit 130. Under ``--json`` even a usage error
    (which click prints on stderr) leaves one JSON document on stdout.
    """

    def invoke(self, ctx: Any) -> Any:
        output.begin_invocation()
        wants_json = _json_requested([*getattr(ctx, "_protected_args", ()), *ctx.args])
        try:
            return super().invoke(ctx)
        except typer.Exit:
            raise
        except BrokenPipeError:  # a closed stdout is main()'s to report: exit 141, silent
            raise output.StdoutClosed from None
        except FRAMEWORK_EXCEPTIONS as exc:
            code = getattr(exc, "exit_code", EXIT_USAGE)
            if wants_json and code:
                emit_error_json(code, exc.format_message() if hasattr(exc, "format_message")
                                else str(exc))
            raise
        except (Exception, KeyboardInterrupt) as exc:
            state = ctx.obj if isinstance(ctx.obj, CliState) else None
            raise typer.Exit(report(exc, state)) from None


def _json_requested(args: list[str]) -> bool:
    """Whether ``--json`` is among a command line's options (before any ``--``)."""
    if "--" in args:
        args = args[: args.index("--")]
    return "--json" in args


class PolicyHelpCommand(TyperCommand):
    """Fills ``{choices}`` (the registry's choices), ``{hidden}`` (registered, not offered)
    and ``{presets}`` (the cost-model presets) in option help when help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        fills = {"{choices}": _choices_text, "{hidden}": _hidden_text,
                 "{presets}": _presets_text}
        for param in self.params:
            text = getattr(param, "help", None)
            for mark, fill in fills.items():
                if isinstance(text, str) and mark in text:
                    text = text.replace(mark, fill())
                    setattr(param, "help", text)  # noqa: B010
        super().format_help(ctx, formatter)


def _presets_text() -> str:
    from radix_evict.sim.timed.cost import preset_names

    return ", ".join(preset_names())


def _choices_text() -> str:
    """The --policy choices, or a note if plugins cannot be loaded right now."""
    from radix_evict import registry

    try:
        return ", ".join(registry.choices())
    except Exception as exc:  # help must still render when a plugin is broken
        return f"(unavailable: {exc})"


def _hidden_text() -> str:
    """The registered policies that are not --policy choices (the registry's own split)."""
    from radix_evict import registry

    try:
        offered = set(registry.choices())
        return ", ".join(n for n in registry.choices(extended=True) if n not in offered) or "none"
    except Exception as exc:  # help must still render when a plugin is broken
        return f"(unavailable: {exc})"


app = typer.Typer(
    name="radix-evict",
    cls=GuardedGroup,
    help="KV-cache eviction policies for radix prefix caches: list, check, lint and simulate.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Exit codes: 0 valid, 1 invalid input, 2 usage or environment error, 130 Ctrl-C, "
           "141 stdout's reader left (| head). -v shows tracebacks.",
)


def _version(value: bool) -> None:
    if value:
        from radix_evict.cache.compiled import describe

        typer.echo(f"radix-evict {__version__} ({describe()})")
        raise typer.Exit()


VerboseOpt = Annotated[bool, typer.Option(
    "-v", "--verbose", help="Show tracebacks of errors (for bug reports).")]
VersionOpt = Annotated[bool, typer.Option(
    "--version", callback=_version, is_eager=True, help="Print the version and exit.")]


@app.callback()
def root(
    ctx: typer.Context,
    verbose: VerboseOpt = False,
    version: VersionOpt = False,
) -> None:
    """KV-cache eviction policies for radix prefix caches.

    Exit codes: 0 valid, 1 invalid input, 2 usage or environment error, 130 Ctrl-C,
    141 stdout's reader left (| head).
    """
    ctx.obj = CliState(verbose=verbose)


app.command("list")(cmd_list.list_policies)
app.command("show")(cmd_show.show_policy)
app.command("validate", cls=PolicyHelpCommand)(cmd_validate.validate)
app.command("lint")(cmd_lint.lint)
app.command("schema")(cmd_schema.schema)
app.command("simulate", cls=PolicyHelpCommand)(cmd_simulate.simulate)
app.command("sweep", cls=PolicyHelpCommand)(cmd_sweep.sweep)
app.command("plan", cls=PolicyHelpCommand)(cmd_plan.plan)
app.command("routers")(cmd_routers.list_routers)
app.command("calibrate")(cmd_calibrate.calibrate)
app.add_typer(cmd_sglang.app, name="sglang")
app.add_typer(cmd_vllm.app, name="vllm")


def main() -> None:
    """Console-script entry point (``radix-evict``); a closed pipe (``| head``) is not an error:
    no message, exit 141 as for a process SIGPIPE ended.

    Ctrl-C outside a command (while plugins load for ``--help``, say) is one
    line and exit 130, as inside one; a stdout that fails at the final flush
    (``> /dev/full``) is one line and exit 2.
    """
    try:
        try:
            app(prog_name="radix-evict")
        except SystemExit as done:
            if isinstance(done.code, int) or done.code is None:
                _exit_now(done.code or 0)
            raise
    except (BrokenPipeError, output.StdoutClosed):
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        output.silence_stdout()
        sys.exit(EXIT_CLOSED_PIPE)
    except KeyboardInterrupt:
        output.silence_stdout()
        _say(f"error: {INTERRUPTED}")
        os._exit(EXIT_INTERRUPTED)
    except OSError as exc:  # stdout failed after the command wrote its answer
        output.silence_stdout()
        _say(f"error: cannot write the output to stdout: {exc.strerror or exc}")
        os._exit(EXIT_USAGE)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _exit_now(code: int) -> None:
    """Exit without tearing the interpreter down, when nothing else is running.

    Python's own exit frees every module and object one by one, which after
    importing torch takes ~0.5 s for nothing: the process is ending. This
    still runs the atexit handlers and flushes stdout and stderr (a closed
    pipe raises BrokenPipeError here, as in a normal exit); only with no
    other thread alive, since a normal exit would wait for them.
    """
    if threading.active_count() > 1:
        return
    sys.stdout.flush()  # a BrokenPipeError goes to main()'s handler
    sys.stderr.flush()
    atexit._run_exitfuncs()
    with contextlib.suppress(OSError, ValueError):  # whatever the handlers printed
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
