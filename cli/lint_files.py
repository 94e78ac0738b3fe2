"""Lint serving configuration files: find SGLang's eviction settings and validate them.

A serving config (YAML, JSON or TOML) may set ``radix-eviction-policy`` and
``radix-eviction-policy-config`` (SGLang's server-argument names; underscores
and a leading ``--`` are accepted too) at any depth. The two keys pair up
inside one mapping. A config without a policy is checked against ``lru``,
SGLang's default, so any key in it is an error, as it would be at startup.
Files that set neither key pass.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from radix_evict import registry
from radix_evict.errors import ConfigProblem, valid_keys_text

from .errors import EXIT_INVALID, EXIT_OK, EXIT_USAGE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

POLICY_KEY = "radix-eviction-policy"
CONFIG_KEY = "radix-eviction-policy-config"
DEFAULT_POLICY = "lru"  # SGLang's default --radix-eviction-policy
NAME_PROBLEMS = ("unknown_policy", "hidden_policy", "plugin_failed", "name_conflict")
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class LintProblem:
    """One problem in one file, located by a dotted key path."""

    file: str
    loc: str
    type: str
    msg: str
    hint: str | None = None
    line: int | None = None
    code: int = EXIT_INVALID

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "loc": self.loc, "type": self.type, "msg": self.msg,
                "hint": self.hint, "line": self.line}

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        loc = f": {self.loc}" if self.loc else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}{loc}: {self.msg}{hint}".replace("\n", "\n    ")


@dataclass
class LintReport:
    """Every problem found in the files checked, and the worst exit code among them."""

    files: int = 0
    problems: list[LintProblem] = field(default_factory=list)

    @property
    def code(self) -> int:
        return max((p.code for p in self.problems), default=EXIT_OK)

    @property
    def status(self) -> str:
        return {EXIT_OK: "ok", EXIT_INVALID: "invalid"}.get(self.code, "error")

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "files": self.files,
                "errors": [p.to_dict() for p in self.problems]}


def dotted(loc: Loc) -> str:
    """``server.radix-eviction-policy-config.protected_threshold``; list items as ``[i]``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def normalize_key(key: Any) -> str:
    """SGLang accepts ``--radix-eviction-policy`` and ``radix_eviction_policy`` alike."""
    return str(key).lstrip("-").replace("_", "-").lower()


class FileProblem(Exception):
    """A file that cannot be read or parsed."""

    def __init__(self, problem: LintProblem) -> None:
        super().__init__(problem.msg)
        self.problem = problem


def _parse_error(path: str, msg: str, line: int | None) -> FileProblem:
    return FileProblem(LintProblem(path, "", "parse_error", msg, None, line))


def load_documents(path: Path) -> list[tuple[Loc, Any]]:
    """The file's documents, each with the loc prefix its problems get (multi-doc YAML)."""
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problem = LintProblem(name, "", "file_unreadable", f"cannot read: {exc.strerror or exc}",
                              None, None, EXIT_USAGE)
        raise FileProblem(problem) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _parse_error(name, f"not UTF-8 text ({exc.reason})", None) from None
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return [((), json.loads(text))]
        except json.JSONDecodeError as exc:
            msg = f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            raise _parse_error(name, msg, exc.lineno) from None
    if suffix == ".toml":
        try:
            return [((), tomllib.loads(text))]
        except tomllib.TOMLDecodeError as exc:
            line = getattr(exc, "lineno", None)
            if line is None:  # before Python 3.14 the line is only in the message
                found = re.search(r"at line (\d+)", str(exc))
                line = int(found.group(1)) if found else None
            raise _parse_error(name, f"malformed TOML: {exc}", line) from None
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        where = f" at line {line}, column {mark.column + 1}" if mark is not None else ""
        parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
        detail = ", ".join(str(x) for x in parts if x) or " ".join(str(exc).split())
        raise _parse_error(name, f"malformed YAML{where}: {detail}", line) from None
    if len(docs) == 1:
        return [((), docs[0])]
    return [((f"document[{i}]",), d) for i, d in enumerate(docs)]


@dataclass(frozen=True)
class Setting:
    """The eviction keys found in one mapping (either may be absent)."""

    loc: Loc
    policy_key: str | None
    policy: Any
    config_key: str | None
    config: Any


def find_settings(node: Any, loc: Loc = ()) -> Iterator[Setting]:
    """Every mapping, at any depth, that sets the policy or its config."""
    if isinstance(node, dict):
        pol_key = cfg_key = None
        for key in node:
            norm = normalize_key(key)
            if norm == POLICY_KEY and pol_key is None:
                pol_key = key
            elif norm == CONFIG_KEY and cfg_key is None:
                cfg_key = key
        if pol_key is not None or cfg_key is not None:
            yield Setting(loc, None if pol_key is None else str(pol_key),
                          node.get(pol_key) if pol_key is not None else None,
                          None if cfg_key is None else str(cfg_key),
                          node.get(cfg_key) if cfg_key is not None else None)
        for key, value in node.items():
            if key not in (pol_key, cfg_key):
                yield from find_settings(value, (*loc, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from find_settings(value, (*loc, i))


def _config_problem(file: str, s: Setting, policy: str, p: ConfigProblem,
                    implied: bool) -> LintProblem:
    """Place a registry problem at the key path it is about."""
    code = EXIT_USAGE if p.type in ("plugin_failed", "name_conflict") else EXIT_INVALID
    if p.type in NAME_PROBLEMS:
        hint = p.hint if p.hint and p.hint not in p.msg else None
        return LintProblem(file, dotted((*s.loc, s.policy_key or POLICY_KEY)), p.type, p.msg,
                           hint, None, code)
    hint = p.hint
    if p.type == "extra_forbidden":
        keys = valid_keys_text(policy, p.valid_keys)
        hint = f"{hint}; {keys}" if hint else keys
    if implied:
        why = f"no {POLICY_KEY} is set, so SGLang uses {DEFAULT_POLICY}"
        hint = f"{hint}; {why}" if hint else why
    inner: Loc = tuple(p.loc) or ((p.key,) if p.key else ())
    if s.config_key is None:
        # A policy that needs a config (tlru) but none is given: point at the policy key.
        msg = f"{p.key}: {p.msg}" if p.key and not p.msg.startswith(p.key) else p.msg
        msg += f" ({CONFIG_KEY} is not set)"
        return LintProblem(file, dotted((*s.loc, s.policy_key or POLICY_KEY)), p.type, msg,
                           hint, None, code)
    return LintProblem(file, dotted((*s.loc, s.config_key, *inner)), p.type, p.msg, hint,
                       None, code)


def check_setting(file: str, s: Setting) -> list[LintProblem]:
    """Validate one mapping's policy and config the way the server would at startup."""
    implied = s.policy_key is None
    policy = DEFAULT_POLICY if implied else s.policy
    if not isinstance(policy, str):
        loc = dotted((*s.loc, s.policy_key or POLICY_KEY))
        msg = f"must be a policy name (a string), got {json.dumps(policy, default=str)}"
        hint = "choices: " + ", ".join(registry.choices())
        return [LintProblem(file, loc, "policy_type", msg, hint)]
    config = s.config
    if config is not None and not isinstance(config, (str, dict)):
        loc = dotted((*s.loc, s.config_key or CONFIG_KEY))
        msg = ("must be a JSON object string or a mapping, got "
               f"{type(config).__name__} {json.dumps(config, default=str)}")
        return [LintProblem(file, loc, "config_type", msg)]
    problems = registry.validate(policy, config, extended=False)
    return [_config_problem(file, s, policy, p, implied and p.type not in NAME_PROBLEMS)
            for p in problems]


def lint_files(paths: Sequence[Path]) -> LintReport:
    """Lint every file; a broken file is reported and the others are still checked."""
    report = LintReport()
    for path in paths:
        report.files += 1
        try:
            docs = load_documents(path)
        except FileProblem as exc:
            report.problems.append(exc.problem)
            continue
        for prefix, data in docs:
            for setting in find_settings(data, prefix):
                report.problems.extend(check_setting(str(path), setting))
    return report
