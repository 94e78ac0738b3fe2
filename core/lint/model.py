"""What lint finds and reports: problems with a place and a severity, and the run's report.

``error``: SGLang 0.5.23 would refuse to start with the file (or start and
fail on its eviction settings), or the file cannot be read. ``warning``:
SGLang runs it, but radix-evict knows better (``--strict`` makes warnings
fail). ``note``: something the reader should know; never fails.

A failing problem also says which outcome it makes the run: ``invalid`` (the
file is wrong) or ``error`` (it could not be checked: unreadable, too slow, a
broken plugin). The library reports outcomes; the CLI maps them to exit codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .readers.nodes import Node
from .text import Text

ERROR, WARNING, NOTE = "error", "warning", "note"
SEVERITIES = (ERROR, WARNING, NOTE)

# A run's outcome, worst last: everything passed, a file is wrong, a file could not be checked.
OK, INVALID, UNCHECKED = "ok", "invalid", "error"
OUTCOMES = (OK, INVALID, UNCHECKED)


@dataclass(frozen=True)
class LintProblem:
    """One problem at ``file:line:column``; ``loc`` says which setting or key it is about."""

    file: str
    loc: str
    type: str
    msg: str
    hint: str | None = None
    line: int | None = None
    column: int | None = None
    severity: str = ERROR
    outcome: str = INVALID  # what it makes the run when it fails: INVALID or UNCHECKED

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column,
                "severity": self.severity, "loc": self.loc, "type": self.type,
                "msg": self.msg, "hint": self.hint}

    def where(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.column or 1}"

    def __str__(self) -> str:
        loc = f" {self.loc}:" if self.loc else ""
        hint = f" ({self.hint})" if self.hint else ""
        text = f"{self.where()}: {self.severity}:{loc} {self.msg}{hint} [{self.type}]"
        return text.replace("\n", "\n    ")


@dataclass
class LintReport:
    """Every problem in the files checked; ``strict`` makes warnings count as failures."""

    files: int = 0
    problems: list[LintProblem] = field(default_factory=list)
    strict: bool = False

    def add(self, problem: LintProblem) -> None:
        self.problems.append(problem)

    def failing(self, p: LintProblem) -> bool:
        return p.severity == ERROR or (self.strict and p.severity == WARNING)

    @property
    def outcome(self) -> str:
        """The worst outcome of the failing problems (a failing warning is ``invalid``)."""
        found = {p.outcome if p.severity == ERROR else INVALID
                 for p in self.problems if self.failing(p)}
        return max(found, key=OUTCOMES.index, default=OK)

    @property
    def ok(self) -> bool:
        return self.outcome == OK

    @property
    def status(self) -> str:
        """The outcome, as ``--format json`` writes it."""
        return self.outcome

    def unique(self) -> list[LintProblem]:
        """Problems in file order, each once (a --config file may be reached twice)."""
        seen: set[tuple[Any, ...]] = set()
        out = []
        for p in self.problems:
            key = (p.file, p.line, p.column, p.type, p.msg)
            if key not in seen:
                seen.add(key)
                out.append(p)
        return out

    def to_dict(self) -> dict[str, Any]:
        problems = self.unique()
        return {"status": self.status, "files": self.files,
                "errors": [p.to_dict() for p in problems if self.failing(p)],
                "warnings": [p.to_dict() for p in problems if not self.failing(p)]}


@dataclass
class Arg:
    """One command-line argument as SGLang receives it, and where it came from.

    ``node`` is the YAML/JSON mapping a config value was written as (SGLang
    turns it into JSON text), so problems inside it point at its keys.
    """

    word: Text
    node: Node | None = None

    @property
    def text(self) -> str:
        return self.word.text


@dataclass
class Invocation:
    """SGLang's arguments as one launch passes them (after the launcher, if one is named).

    ``style``: ``argv`` (a command line), ``config-file`` (an SGLang ``--config``
    YAML, read by its rules) or ``mapping`` (a settings mapping in any file,
    keys in any spelling). ``merges_config``: the launcher reads ``--config FILE``.
    ``engine``: whose arguments they are, ``sglang`` or ``vllm`` (``vllm serve``, or
    ``--kv-transfer-config`` with no launcher named).
    """

    args: list[Arg]
    loc: str
    style: str = "argv"
    launcher: str | None = None
    merges_config: bool = True
    base_dir: str = "."
    engine: str = "sglang"
