"""The library stays readable in pieces: no module over 600 lines, no function over 100.

``core/`` is the library (its ``cli`` and ``builtin_policies`` entries are links
to the top-level folders, the CLI and a plugin package, and are not counted).
A module or function that grows past the limit is split by job, as
``core/cache/radix_tree.py`` and ``core/sim/timed/`` are.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
LINKED = {"cli", "builtin_policies"}  # the top-level folders, linked into the package
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


def library_modules() -> list[Path]:
    return sorted(
        p for p in CORE.rglob("*.py")
        if p.relative_to(CORE).parts[0] not in LINKED and "__pycache__" not in p.parts
    )


def test_the_walk_finds_the_library() -> None:
    names = {p.relative_to(CORE).as_posix() for p in library_modules()}
    assert "cache/radix_cache.py" in names and "sim/replay.py" in names
    assert not any(n.startswith(("cli/", "builtin_policies/")) for n in names)


def test_no_library_module_is_over_600_lines() -> None:
    long = {
        p.relative_to(CORE).as_posix(): n
        for p in library_modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by job): {long}"


def test_no_library_function_is_over_100_lines() -> None:
    long = []
    for p in library_modules():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = (node.end_lineno or node.lineno) - node.lineno + 1
                if span > MAX_FUNCTION_LINES:
                    long.append(f"{p.relative_to(CORE).as_posix()}:{node.lineno} {node.name} "
                                f"({span} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
