"""Lint files: read each within bounds, find SGLang's eviction settings, give the verdict.

One file's problem (unreadable, too large, a FIFO, malformed, too deep, an
alias bomb, slow) is reported for that file, and the other files are still
checked. A file that never mentions ``radix`` (nor ``--config``) has no
SGLang eviction setting and passes untouched, unread past a text search.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import EXIT_INVALID, EXIT_USAGE
from .lint_argv import not_found_note, problem_at, resolve
from .lint_json import parse_json
from .lint_model import ERROR, Arg, Invocation, LintProblem, LintReport
from .lint_nodes import MAX_BYTES, MAX_DEPTH, LimitExceeded, Node, ParseFailure
from .lint_shell import is_opaque
from .lint_sources import TreeWalker, dockerfile_invocations, from_script, is_setting_key
from .lint_text import Source, Text
from .lint_verdict import check
from .lint_yaml import parse_yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SECONDS_PER_FILE = 60  # a safety net: the bounds below keep real files far under it
RELEVANT = re.compile(r"radix|--conf", re.IGNORECASE)
SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
YAML_SUFFIXES = (".yaml", ".yml")
# What a folder argument expands to, and what the pre-commit hook passes.
PATTERNS = ("*.yaml", "*.yml", "*.json", "*.toml", "*.sh", "*.bash", "Dockerfile", "Dockerfile.*",
            "*.Dockerfile", "*.dockerfile", "Containerfile", "Containerfile.*")


class FileProblem(Exception):
    """A file that cannot be checked."""

    def __init__(self, problem: LintProblem) -> None:
        super().__init__(problem.msg)
        self.problem = problem


def _file_error(path: str, type_: str, msg: str, code: int = EXIT_USAGE,
                line: int | None = None, column: int | None = None) -> FileProblem:
    return FileProblem(LintProblem(path, "", type_, msg, None, line, column, ERROR, code))


def read_source(path: Path) -> Source:
    """The file's text, refusing what is not a regular file or is over MAX_BYTES."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _file_error(name, "file_unreadable", f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = ("a directory" if stat.S_ISDIR(info.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(info.st_mode) else
                    "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                    "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
            raise _file_error(name, "not_regular_file",
                              f"not a regular file ({what}); lint reads only files")
        if info.st_size > MAX_BYTES:
            raise _file_error(name, "file_too_large", _too_large(info.st_size))
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise _file_error(name, "file_unreadable", f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        raise _file_error(name, "file_too_large", _too_large(len(raw)))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _file_error(name, "parse_error", f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                          EXIT_INVALID) from None
    return Source(name, text)


def _too_large(size: int) -> str:
    return (f"{size / 2**20:.1f} MiB is over lint's {MAX_BYTES // 2**20} MiB limit per file "
            "(serving configs are far smaller)")


def file_kind(path: Path, text: str) -> str:
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


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError after ``seconds`` (main thread on POSIX; elsewhere no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic GC off while one file's tree is built: its many small nodes made
    collections run over and over (3x the parse time); the tree holds no cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Linter:
    """One run over many files; ``--config`` files are read once however often referenced."""

    def __init__(self, strict: bool = False) -> None:
        self.report = LintReport(strict=strict)
        self._config_files: dict[str, list[Arg] | None] = {}

    # ------------------------------------------------------------------ one file
    def lint_path(self, path: Path) -> None:
        self.report.files += 1
        try:
            with time_limit(SECONDS_PER_FILE), no_gc():
                for p in self._lint(path):
                    self.report.add(p)
        except FileProblem as exc:
            self.report.add(exc.problem)
        except TimeoutError:
            self.report.add(LintProblem(str(path), "", "too_slow",
                                        f"checking took over {SECONDS_PER_FILE} s; gave up",
                                        code=EXIT_USAGE))
        except (RecursionError, MemoryError) as exc:
            self.report.add(LintProblem(str(path), "", "too_complex",
                                        f"too complex to check ({type(exc).__name__})",
                                        code=EXIT_INVALID))
        except Exception as exc:  # a bug here must not cost the other files their check
            self.report.add(LintProblem(str(path), "", "internal_error",
                                        f"internal error while checking: {type(exc).__name__}: "
                                        f"{exc}", code=EXIT_USAGE))

    def _lint(self, path: Path) -> list[LintProblem]:
        source = read_source(path)
        if RELEVANT.search(source.text) is None:
            return []
        kind = file_kind(path, source.text)
        base_dir = str(path.parent)
        problems: list[LintProblem] = []
        try:
            invocations = self._invocations(source, kind, base_dir, problems, path)
        except ParseFailure as exc:
            raise self._located(source, "parse_error", f"malformed {_KIND_NAMES[kind]}", exc.msg,
                                exc.offset) from None
        except LimitExceeded as exc:
            raise self._located(source, exc.kind, "refused", exc.msg, exc.offset) from None
        for inv in invocations:
            resolved = resolve(inv, self._load_config_file)
            problems.extend(resolved.problems)
            problems.extend(check(resolved.policy, resolved.config, resolved.overridden,
                                  resolved.cache_disabled))
        return problems

    @staticmethod
    def _located(source: Source, type_: str, what: str, msg: str,
                 offset: int | None) -> FileProblem:
        if offset is None:
            return _file_error(source.path, type_, f"{what}: {msg}", EXIT_INVALID)
        line, column = source.where(offset)
        return _file_error(source.path, type_, f"{what} at line {line}, column {column}: {msg}",
                           EXIT_INVALID, line, column)

    def _invocations(self, source: Source, kind: str, base_dir: str,
                     problems: list[LintProblem], path: Path) -> list[Invocation]:
        if kind == "shell":
            return list(from_script(Text.at(source.text, source, 0), "", base_dir))
        if kind == "dockerfile":
            return list(dockerfile_invocations(source, base_dir))
        if kind == "json":
            docs: list[Node | None] = [parse_json(source.text, source)]
            config_root = False
        elif kind == "toml":
            docs = [toml_tree(source)]
            config_root = False
        else:
            docs = parse_yaml(source)
            present = [d for d in docs if d is not None]
            config_root = (path.suffix.lower() in YAML_SUFFIXES and len(docs) == 1
                           and bool(present) and present[0].kind == "map")
        invocations: list[Invocation] = []
        multi = len(docs) > 1
        for i, doc in enumerate(docs):
            walker = TreeWalker(base_dir, config_root)
            walker.walk(doc, (f"document[{i}]",) if multi else ())
            problems.extend(walker.problems)
            invocations.extend(walker.invocations)
        return invocations

    # ------------------------------------------------------------------ --config FILE
    def _load_config_file(self, word: Text, inv: Invocation) -> list[Arg] | None:
        """The arguments SGLang's merge makes of ``--config FILE``, if the file is here."""
        loc = f"{inv.loc} --config".strip()
        if is_opaque(word.text):
            return None
        candidates = [Path(word.text)] if os.path.isabs(word.text) else [
            Path(inv.base_dir) / word.text, Path(word.text)]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            self.report.add(not_found_note(word, loc))
            return None
        key = str(found.resolve())
        if key in self._config_files:
            return self._config_files[key]
        self._config_files[key] = None
        try:
            source = read_source(found)
            docs = parse_yaml(source)
        except FileProblem as exc:
            self.report.add(exc.problem)
            return None
        except (ParseFailure, LimitExceeded) as exc:
            self.report.add(self._located(source, "parse_error", "malformed YAML", exc.msg,
                                          exc.offset).problem)
            return None
        if len(docs) != 1 or (docs[0] is not None and docs[0].kind != "map"):
            self.report.add(problem_at(word, 0, "config_file",
                                       f"SGLang refuses --config {word.text}: it must hold one "
                                       "YAML mapping", loc=loc))
            return None
        root = docs[0]
        if root is None:
            self._config_files[key] = []
            return []
        walker = TreeWalker(str(found.parent), True)
        settings = [(k, v) for k, v in root.items if is_setting_key(k)]
        walker._settings(root, settings, (), True)
        for p in walker.problems:
            self.report.add(p)
        args = [a for i in walker.invocations for a in i.args]
        self._config_files[key] = args
        return args


_KIND_NAMES = {"yaml": "YAML", "json": "JSON", "toml": "TOML", "shell": "shell script",
               "dockerfile": "Dockerfile"}


def toml_tree(source: Source) -> Node:
    """TOML through tomllib, as a Node tree placed at each key's first spelling in the text."""
    text = source.text
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        if line is None:  # before Python 3.14 the line is only in the message
            found = re.search(r"at line (\d+)", str(exc))
            line = int(found.group(1)) if found else None
        offset = None
        if line is not None:
            offset = sum(len(x) + 1 for x in text.split("\n")[: line - 1])
        raise ParseFailure(str(exc), offset) from None
    except RecursionError:
        raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep") from None

    def build(value: Any, at: int, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise LimitExceeded("too_deep", f"nested more than {MAX_DEPTH} levels deep", at)
        if isinstance(value, dict):
            node = Node("map", at, source)
            for k, v in value.items():
                m = re.compile(r"[\"']?" + re.escape(str(k)) + r"[\"']?[ \t]*[=.\]]").search(
                    text, at)
                pos = m.start() if m else at
                key = Node("scalar", pos, source, str(k), "", pos + len(str(k)))
                if m and text[m.end() - 1] in ".]":  # a table header or dotted key: inside it
                    vpos = m.end()
                else:
                    vpos = text.find("=", pos)
                    vpos = pos if vpos < 0 else vpos + 1
                while vpos < len(text) and text[vpos] in " \t":
                    vpos += 1
                node.items.append((key, build(v, vpos, depth + 1)))
            return node
        if isinstance(value, list):
            node = Node("seq", at, source)
            node.items = [build(v, at, depth + 1) for v in value]
            return node
        style = ""
        if isinstance(value, str) and at < len(text) and text[at] in "'\"":
            style = text[at]
        end = at + (len(value) + 2 if isinstance(value, str) else 1)
        return Node("scalar", at, source, value, style, end)

    return build(data, 0, 0)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Files as given; folders: the files in them that lint knows (not hidden ones)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = set()
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in files:
                    if any(Path(f).match(pat) for pat in PATTERNS):
                        found.add(Path(root) / f)
            out.extend(sorted(found))
        else:
            out.append(p)
    return out


def lint_files(paths: Sequence[Path], strict: bool = False) -> LintReport:
    """Lint every file (folders: the files in them); a bad file never stops the others."""
    linter = Linter(strict)
    for path in expand(paths):
        linter.lint_path(path)
    return linter.report


def invocations_of(path: Path) -> list[Invocation]:
    """The SGLang launches lint finds in one file (for tests that replay them in SGLang)."""
    source = read_source(path)
    kind = file_kind(path, source.text)
    return Linter()._invocations(source, kind, str(path.parent), [], path)
