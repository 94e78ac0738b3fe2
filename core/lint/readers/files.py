"""One lint target's text, read through :mod:`radix_evict.inputs`, and which shape it is.

The bounds (regular files only, ``LINT_BYTES``) are the ones every reader of
radix-evict uses; the wording is lint's own, since a lint problem already
names its file in front of the message.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePath

from radix_evict.inputs import LINT_BYTES, InputFileError, read_bytes

from ..model import ERROR, INVALID, UNCHECKED, LintProblem
from ..text import Source

KINDS = ("yaml", "json", "toml", "shell", "dockerfile")
KIND_NAMES = {"yaml": "YAML", "json": "JSON", "toml": "TOML", "shell": "shell script",
              "dockerfile": "Dockerfile"}
SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
YAML_SUFFIXES = (".yaml", ".yml")
_SIZE = re.compile(r"^([\d.]+) MiB")


class FileProblem(Exception):
    """A file that cannot be checked."""

    def __init__(self, problem: LintProblem) -> None:
        super().__init__(problem.msg)
        self.problem = problem


def file_error(path: str, type_: str, msg: str, outcome: str = UNCHECKED,
               line: int | None = None, column: int | None = None) -> FileProblem:
    return FileProblem(LintProblem(path, "", type_, msg, None, line, column, ERROR, outcome))


def _lint_wording(exc: InputFileError) -> str:
    """The reader's reason, said as lint has always said it (tests and users rely on it)."""
    if exc.type == "not_regular_file":
        return exc.reason.split(";", 1)[0] + "; lint reads only files"
    if exc.type == "file_too_large":
        size = _SIZE.match(exc.reason)
        shown = f"{size.group(1)} MiB" if size else "the file"
        return (f"{shown} is over lint's {LINT_BYTES // 2**20} MiB limit per file "
                "(serving configs are far smaller)")
    return exc.reason


def read_source(path: Path) -> Source:
    """The file's text, refusing what is not a regular file or is over LINT_BYTES."""
    name = str(path)
    try:
        raw = read_bytes(path, limit=LINT_BYTES, what="a file lint reads")
    except InputFileError as exc:
        raise file_error(name, exc.type, _lint_wording(exc)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise file_error(name, "parse_error",
                         f"not UTF-8 text ({exc.reason} at byte {exc.start})", INVALID) from None
    return Source(name, text)


def file_kind(path: PurePath, text: str) -> str:
    """``yaml``, ``json``, ``toml``, ``shell`` or ``dockerfile``, from the name or a shebang."""
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix == ".toml":
        return "toml"
    if suffix in SHELL_SUFFIXES:
        return "shell"
    if name.startswith(("dockerfile", "containerfile")) or suffix in (".dockerfile",
                                                                       ".containerfile"):
        return "dockerfile"
    if text.startswith("#!") and re.match(r"#![^\n]*\b(ba|z|k|da|a)?sh\b", text):
        return "shell"
    return "yaml"
