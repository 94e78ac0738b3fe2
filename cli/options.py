"""Parsing the option values several commands share: --config, --param, --policy runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import ENV_PROBLEMS, ConfigProblem
from radix_evict.inputs import CONFIG_BYTES, InputFileError, read_text

from .errors import EXIT_USAGE, CliError

NAME_SEP = "="
NOT_UTF8 = "not_utf8"  # radix_evict.inputs' code for a file that is not UTF-8 text


def read_config_arg(value: str | None, option: str = "--config") -> str | None:
    """``--config`` as given: a JSON string, or ``@FILE`` to read the JSON from a file.

    The file is read through :func:`radix_evict.inputs.read_text`: a regular
    file of at most CONFIG_BYTES, UTF-8; anything else is a usage error naming
    ``option`` and the file (exit 1 for a file that is not UTF-8 text).
    """
    if value is None or not value.startswith("@"):
        return value
    try:
        return read_text(value[1:], limit=CONFIG_BYTES, what="a config file")
    except InputFileError as exc:
        if exc.type == NOT_UTF8:  # there is a file, and it is not a config: invalid input
            raise CliError(f"{option} {value}: {exc.path} is {exc.reason}") from None
        raise CliError(f"{option} {value}: {exc}", EXIT_USAGE) from None


def split_named_config(value: str) -> tuple[str | None, str]:
    """``NAME=JSON`` -> (NAME, JSON); plain JSON (or @FILE) -> (None, value)."""
    head, sep, rest = value.partition(NAME_SEP)
    if sep and head and not head.lstrip().startswith(("{", "@", "[", '"')) and " " not in head:
        return head.strip(), rest
    return None, value


def problem_lines(policy: str, problems: Sequence[ConfigProblem]) -> list[str]:
    """People's view of a validation result: policy, key, message and suggestion per problem."""
    n = len(problems)
    lines = [f"policy {policy!r}: {n} problem{'s' if n != 1 else ''}"]
    for p in problems:
        lines.append("  - " + problem_text(p).replace("\n", "\n    "))
    return lines


def problem_text(p: ConfigProblem) -> str:
    """A problem in one line; name problems already carry their hint in the message."""
    if p.key is None and p.hint and p.hint in p.msg:
        return p.msg
    return str(p)


def problems_code(problems: Sequence[ConfigProblem]) -> int:
    """2 when a needed plugin is broken or ambiguous (environment), else 1 (invalid input)."""
    return EXIT_USAGE if any(p.type in ENV_PROBLEMS for p in problems) else 1


def parse_value(text: str) -> Any:
    """A ``--param`` value: JSON when it parses (numbers, booleans), else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass(frozen=True)
class Param:
    """One ``--param [WORKLOAD.]KEY=VALUE``."""

    workload: str | None
    key: str
    value: Any


def parse_params(values: Sequence[str]) -> list[Param]:
    """``--param`` options; a value without '=' is a usage error."""
    out = []
    for raw in values:
        key, sep, value = raw.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--param {raw!r}: expected KEY=VALUE (or WORKLOAD.KEY=VALUE)",
                           EXIT_USAGE)
        scope, dot, name = key.strip().rpartition(".")
        out.append(Param(scope if dot else None, name, parse_value(value.strip())))
    return out
