"""Lint files: read each within bounds, find SGLang's eviction and HiCache settings and vLLM's
offload policy settings, give each engine's verdict.

One file's problem (unreadable, too large, a FIFO, malformed, too deep, an
alias bomb, slow) is reported for that file, and the other files are still
checked. A file that never mentions ``radix`` (nor ``--config``, nor HiCache's flags, nor
vLLM's ``kv-transfer-config``) has no such setting and passes untouched, unread past a text
search.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any

from radix_evict.inputs import named_files_closed

from .argv import not_found_note, problem_at, resolve
from .model import INVALID, UNCHECKED, Arg, Invocation, LintProblem, LintReport
from .readers.dockerfile import dockerfile_invocations
from .readers.files import (
    KIND_NAMES,
    KINDS,
    YAML_SUFFIXES,
    FileProblem,
    file_error,
    file_kind,
    read_source,
)
from .readers.json_tree import parse_json
from .readers.nodes import LimitExceeded, Node, ParseFailure
from .readers.shell import is_opaque
from .readers.sources import TreeWalker, from_script, is_setting_key
from .readers.toml_tree import toml_tree
from .readers.yaml_tree import parse_yaml
from .text import Source, Text
from .verdict import check, hicache_check
from .vllm_launch import vllm_problems

SECONDS_PER_FILE = 60  # a safety net: the bounds below keep real files far under it
RELEVANT = re.compile(r"radix|--conf|kv[-_]transfer[-_]config|hicache|--hi|enable[-_]hi",
                      re.IGNORECASE)
# What a folder argument expands to, and what the pre-commit hook passes.
PATTERNS = ("*.yaml", "*.yml", "*.json", "*.toml", "*.sh", "*.bash", "Dockerfile", "Dockerfile.*",
            "*.Dockerfile", "*.dockerfile", "Containerfile", "Containerfile.*")


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
    """One run over many files; ``--config`` files are read once however often referenced.

    ``open_files`` False (the default): a config's checks open no file the config names
    (a ``weights`` path belongs to the machine that will launch it, and may be a FIFO or
    ``/dev/zero`` here): :func:`radix_evict.inputs.named_files_closed` around each file.
    """

    def __init__(self, strict: bool = False, *, open_files: bool = False) -> None:
        self.report = LintReport(strict=strict)
        self.open_files = open_files
        self._config_files: dict[str, list[Arg] | None] = {}

    # ------------------------------------------------------------------ one file
    def lint_path(self, path: Path) -> None:
        """Read and check one file; its problems (or why it could not be read) go to the report."""
        self._guarded(str(path), lambda: self._lint(read_source(path), path))

    def lint_source(self, source: Source, kind: str | None = None) -> None:
        """Check text already in hand (``source.path`` names it and picks its kind)."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self._guarded(source.path, lambda: self._lint(source, PurePath(source.path), kind))

    def _guarded(self, name: str, run: Callable[[], list[LintProblem]]) -> None:
        """Run one file's check; whatever goes wrong costs that file only."""
        self.report.files += 1
        try:
            with (time_limit(SECONDS_PER_FILE), no_gc(),
                  named_files_closed(not self.open_files)):
                for p in run():
                    self.report.add(p)
        except FileProblem as exc:
            self.report.add(exc.problem)
        except TimeoutError:
            self.report.add(LintProblem(name, "", "too_slow",
                                        f"checking took over {SECONDS_PER_FILE} s; gave up",
                                        outcome=UNCHECKED))
        except (RecursionError, MemoryError) as exc:
            self.report.add(LintProblem(name, "", "too_complex",
                                        f"too complex to check ({type(exc).__name__})",
                                        outcome=INVALID))
        except Exception as exc:  # a bug here must not cost the other files their check
            self.report.add(LintProblem(name, "", "internal_error",
                                        f"internal error while checking: {type(exc).__name__}: "
                                        f"{exc}", outcome=UNCHECKED))

    def _lint(self, source: Source, path: PurePath, kind: str | None = None
              ) -> list[LintProblem]:
        if RELEVANT.search(source.text) is None:
            return []
        kind = kind or file_kind(path, source.text)
        base_dir = str(path.parent)
        problems: list[LintProblem] = []
        try:
            invocations = self._invocations(source, kind, base_dir, problems, path)
        except ParseFailure as exc:
            raise self._located(source, "parse_error", f"malformed {KIND_NAMES[kind]}", exc.msg,
                                exc.offset) from None
        except LimitExceeded as exc:
            raise self._located(source, exc.kind, "refused", exc.msg, exc.offset) from None
        for inv in invocations:
            if inv.engine == "vllm":
                problems.extend(vllm_problems(inv))
                continue
            resolved = resolve(inv, self._load_config_file)
            problems.extend(resolved.problems)
            problems.extend(check(resolved.policy, resolved.config, resolved.overridden,
                                  resolved.cache_disabled))
            problems.extend(hicache_check(resolved.hicache, resolved.cache_disabled))
        return problems

    @staticmethod
    def _located(source: Source, type_: str, what: str, msg: str,
                 offset: int | None) -> FileProblem:
        if offset is None:
            return file_error(source.path, type_, f"{what}: {msg}", INVALID)
        line, column = source.where(offset)
        return file_error(source.path, type_, f"{what} at line {line}, column {column}: {msg}",
                           INVALID, line, column)

    def _invocations(self, source: Source, kind: str, base_dir: str,
                     problems: list[LintProblem], path: PurePath) -> list[Invocation]:
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


def lint_paths(paths: Sequence[str | os.PathLike[str]], *, strict: bool = False,
               open_files: bool = False) -> LintReport:
    """Lint every file (folders: the files in them lint knows); a bad file never stops the others.

    ``strict``: warnings fail too. ``open_files``: also open the files the configs name
    (a policy's weights), as the launch would. Nothing is printed; render the report with
    :mod:`radix_evict.lint.formats`.
    """
    linter = Linter(strict, open_files=open_files)
    for path in expand([Path(p) for p in paths]):
        linter.lint_path(path)
    return linter.report


def lint_text(text: str, name: str = "<text>", kind: str | None = None, *,
              strict: bool = False, open_files: bool = False) -> LintReport:
    """Lint one file's text without reading it from disk.

    ``name`` is how problems name the file; it also picks the shape (``serve.sh``,
    ``Dockerfile``, ``*.json``...) unless ``kind`` (one of :data:`KINDS`) says it.
    A ``--config FILE`` it names is looked up beside ``name``; ``open_files`` as in
    :func:`lint_paths`.
    """
    linter = Linter(strict, open_files=open_files)
    linter.lint_source(Source(name, text), kind)
    return linter.report


def invocations_of(path: Path, engine: str = "sglang") -> list[Invocation]:
    """The SGLang launches lint finds in one file (for tests that replay them in SGLang);
    ``engine="vllm"``: the vLLM ones."""
    source = read_source(path)
    kind = file_kind(path, source.text)
    found = Linter()._invocations(source, kind, str(path.parent), [], path)
    return [inv for inv in found if inv.engine == engine]
