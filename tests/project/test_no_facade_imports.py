"""No library module under ``core/`` imports the ``radix_evict`` facade.

``radix_evict/__init__.py`` re-exports the public names lazily, for users; a
part of the library that imported it would hide its real arrow (the import
contracts see "radix_evict", not the module behind the name) and load by name
what the layers keep apart. The library imports the module that defines a
name; the command line (``cli/``) and the built-in policy package
(``builtin_policies/``) are the facade's clients and may use it.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
PACKAGE = "radix_evict"


def facade_imports(source: str, package: str) -> list[tuple[int, str]]:
    """(line, statement) for each import of the facade in a module of ``package``.

    ``import radix_evict``, ``from radix_evict import X`` and a relative import
    that reaches the package root and takes a name that is not a module of it.
    """
    submodules = {p.stem for p in CORE.iterdir() if p.suffix == ".py" or p.is_dir()}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [a.name for a in node.names]
            if module == PACKAGE and any(n not in submodules for n in names):
                found.append((node.lineno, f"from {module} import {', '.join(names)}"))
    return found


def _library_modules() -> list[Path]:
    """Every .py under core/ but the facade itself; os.walk does not enter core/cli and
    core/builtin_policies, which are links to the facade's clients."""
    out = []
    for folder, subdirs, files in os.walk(CORE):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        out += [Path(folder, f) for f in files if f.endswith(".py")]
    return sorted(p for p in out if p != CORE / "__init__.py")


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from (its folder's)."""
    return ".".join((PACKAGE, *path.relative_to(CORE).parts[:-1]))


def test_no_library_module_imports_the_facade() -> None:
    modules = _library_modules()
    assert len(modules) > 100 and not any("cli" in p.relative_to(CORE).parts[:1]
                                          for p in modules)
    bad = [f"{p.relative_to(ROOT)}:{line}: {stmt}"
           for p in modules
           for line, stmt in facade_imports(p.read_text(encoding="utf-8"), _package_of(p))]
    assert not bad, ("import the defining module instead of the radix_evict facade:\n"
                     + "\n".join(bad))


def test_the_check_sees_each_form() -> None:
    src = ("import radix_evict\n"
           "from radix_evict import registry\n"
           "def f():\n    from radix_evict import KVPool\n"
           "from .. import TreeNode\n"
           "from radix_evict.policies.registry import registry\n"
           "from .. import errors\n"
           "import radix_evict.cache\n")
    assert sorted(line for line, _ in facade_imports(src, "radix_evict.lint")) == [1, 2, 4, 5]
