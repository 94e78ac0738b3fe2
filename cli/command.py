"""A command's options as one frozen dataclass: typer reads its fields, the command gets one object.

Each field is an ``Annotated[T, typer.Option(...)]`` with its default;
:func:`options_command` turns ``run(ctx, options)`` into the function typer
registers (one parameter per field, in field order) and puts each option in
its named ``--help`` panel. Defaults are shown one way, typer's
``[default: ...]``: a field whose default is None names what it means with
``show_default="..."`` on its option.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from typing import Annotated, Any, TypeVar

import typer
from typer.models import OptionInfo

from radix_evict.outputs import FORCE_FLAG
from radix_evict.sim.sweep.values import SweepValueError, parse_count

OptionsT = TypeVar("OptionsT")
T = TypeVar("T")

ForceOpt = Annotated[bool, typer.Option(
    FORCE_FLAG, help="Let an output option replace an existing file radix-evict did not "
                     "write (never a file the run reads).")]


def token_count(least: int) -> Callable[[str], int]:
    """An option's reader of a size in tokens, in sweep's syntax (``4000000``, ``4M``,
    ``64Ki``), at least ``least``: a one-value option takes what the sweep's lists take."""

    def read(text: str) -> int:
        try:
            value = parse_count(text, "tokens")
        except SweepValueError as err:
            raise typer.BadParameter(str(err)) from None
        if value < least:
            raise typer.BadParameter(f"tokens: {value} is below {least}")
        return value

    read.__name__ = "tokens"  # typer's metavar, upper-cased
    return read


def plain(options: Any, library_type: type[T]) -> T:
    """``options`` as the library's own dataclass of plain values: each of its fields taken
    from the option of the same name."""
    names = [f.name for f in dataclasses.fields(library_type)]  # type: ignore[arg-type]
    return library_type(**{name: getattr(options, name) for name in names})


def in_panel(annotation: Any, panel: str) -> Any:
    """``Annotated[T, typer.Option(...)]`` with the option in help panel ``panel``."""
    base, *extras = typing.get_args(annotation)
    marked = []
    for extra in extras:
        if isinstance(extra, OptionInfo):
            extra = copy(extra)
            extra.rich_help_panel = panel
        marked.append(extra)
    return Annotated[(base, *marked)]


def options_command(options: type[OptionsT], panels: Mapping[str, Sequence[str]]
                    ) -> Callable[[Callable[[typer.Context, OptionsT], None]], Callable[..., None]]:
    """Decorate ``run(ctx, options)``: the result is a typer command taking ``options``'
    fields as options, each in the panel that lists it (every field in one panel)."""
    hints = typing.get_type_hints(options, include_extras=True)
    where = {name: panel for panel, names in panels.items() for name in names}
    fields = dataclasses.fields(options)  # type: ignore[arg-type]
    missing = [f.name for f in fields if f.name not in where]
    if missing:
        raise TypeError(f"{options.__name__}: no help panel for {', '.join(missing)}")
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=typer.Context)]
    params += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                                 annotation=in_panel(hints[f.name], where[f.name]),
                                 default=f.default) for f in fields]

    def wrap(run: Callable[[typer.Context, OptionsT], None]) -> Callable[..., None]:
        @functools.wraps(run)
        def command(ctx: typer.Context, **values: Any) -> None:
            run(ctx, options(**values))

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {}
        del command.__wrapped__
        return command

    return wrap
