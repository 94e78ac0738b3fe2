"""The architecture's arrows, from the code: the package as it installs, and who imports whom.

The source folders are not shaped like the package (``core/`` installs as
``radix_evict``, ``cli/`` as ``radix_evict.cli``: pyproject's ``package-dir``
table), so tools that walk a package (mypy, import-linter) get a tree of
links with the installed shape, built here from that table: the only place
the mapping is read. ``python docs/gen/architecture.py tree DIR`` builds it
(the Makefile's typecheck and imports targets do).

The diagram on the Architecture page is the graph of direct imports between
radix-evict's parts, computed with grimp (import-linter's graph library)
over that tree, so the page shows what the code does and the contracts in
pyproject.toml say what it may do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

try:  # imported as docs/gen's module (generate.py) or loaded from its file (tests)
    from gen.common import ROOT, apply_sections
except ImportError:  # pragma: no cover - run as a script: docs/ is not on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gen.common import ROOT, apply_sections

PACKAGE = "radix_evict"
PAGE = ROOT / "docs" / "architecture.md"
# Top-level modules every part may use (the error types, bounded input, safe output, "did
# you mean"): drawn once in the table, left out of the diagram so the arrows between parts
# stay legible.
SHARED = ("errors", "inputs", "outputs", "suggest")


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Package name -> source folder, from pyproject.toml's ``[tool.setuptools] package-dir``."""
    with open(root / "pyproject.toml", "rb") as f:
        table = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in table.items()}


def build_tree(dest: Path, root: Path = ROOT) -> Path:
    """``dest/radix_evict/...`` with the installed shape: real folders, each file a symlink.

    File links (not folder links) because import-linter's walk does not follow
    linked folders. Returns ``dest``, which goes on ``sys.path`` (or PYTHONPATH).
    """
    if dest.exists():
        shutil.rmtree(dest)
    for name, src in sorted(package_dirs(root).items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*name.split("."))
        for folder, subdirs, files in os.walk(src):
            subdirs[:] = [d for d in subdirs if d != "__pycache__" and not d.startswith(".")]
            rel = Path(folder).relative_to(src)
            # A folder that is a package of its own in the table is linked by its own entry.
            if rel != Path(".") and f"{name}.{'.'.join(rel.parts)}" in package_dirs(root):
                subdirs[:] = []
                continue
            out = target / rel
            out.mkdir(parents=True, exist_ok=True)
            for f in files:
                if f.endswith((".py", ".pyi", ".typed")):
                    (out / f).symlink_to(Path(folder, f).resolve())
    return dest


@contextmanager
def installed_shape() -> Iterator[Path]:
    """A temporary :func:`build_tree`, removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="radix-evict-tree-") as tmp:
        yield build_tree(Path(tmp) / "tree")


def part_of(module: str) -> str:
    """``radix_evict.cache.tree`` -> ``cache``; the package's ``__init__`` -> ``radix_evict``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


_DIRECT_IMPORTS = """
import json, grimp
graph = grimp.build_graph("radix_evict", cache_dir=None)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}))
"""


def direct_imports() -> dict[str, list[str]]:
    """Module -> the radix_evict modules it imports directly (lazy imports included).

    grimp runs in a fresh interpreter over the tree: in this one ``radix_evict``
    may already be imported from its source folders, which grimp would walk instead.
    """
    with installed_shape() as tree:
        out = subprocess.run([sys.executable, "-c", _DIRECT_IMPORTS], cwd=tree,
                             env={**os.environ, "PYTHONPATH": str(tree)},
                             capture_output=True, text=True, check=True, timeout=300)
    result: dict[str, list[str]] = json.loads(out.stdout)
    return result


def module_graph() -> dict[str, dict[str, set[str]]]:
    """Part -> imported part -> the modules of it imported directly."""
    edges: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for module, imported_modules in direct_imports().items():
        src = part_of(module)
        edges.setdefault(src, {})
        for imported in imported_modules:
            dst = part_of(imported)
            if dst != src and dst != PACKAGE:
                edges[src].setdefault(dst, set()).add(imported)
    return dict(edges)


def part_graph() -> dict[str, set[str]]:
    """Part -> the parts its modules import directly."""
    return {src: set(dsts) for src, dsts in module_graph().items()}


MAX_LABELLED = 3  # an arrow into at most this many modules of a part names them


def _label(dst: str, modules: set[str]) -> str:
    inner = sorted(m.split(".", 2)[2] for m in modules if m.count(".") >= 2)
    if not inner or len(inner) > MAX_LABELLED or len(inner) != len(modules):
        return ""
    return "|" + ", ".join(inner) + "|"


def render(edges: Mapping[str, Mapping[str, set[str]]]) -> str:
    """A mermaid diagram of the arrows between parts (an arrow into one to three modules of
    a part names them), then the same facts as a table."""
    parts = sorted(p for p in edges if p not in SHARED and p != "__main__")
    lines = ["```mermaid", "flowchart TD"]
    for src in parts:
        for dst, modules in sorted(edges[src].items()):
            if dst not in SHARED:
                lines.append(f"    {src} -->{_label(dst, modules)} {dst}")
    lines += ["```", "", "| part | imports (directly) |", "|---|---|"]
    for src in sorted(edges):
        shown = ", ".join(f"`{d}`" for d in sorted(edges[src])) or "nothing of radix-evict's"
        lines.append(f"| `{src}` | {shown} |")
    return "\n".join(lines) + "\n"


def page() -> str:
    """docs/architecture.md with its generated import graph brought up to date."""
    text = PAGE.read_text(encoding="utf-8")
    return apply_sections(text, {"import-graph": render(module_graph())}, PAGE.name)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "tree":
        print(build_tree(Path(argv[1]).resolve()))
        return 0
    if len(argv) >= 1 and argv[0] == "lint-imports":
        tree = build_tree(Path(tempfile.mkdtemp(prefix="radix-evict-tree-")) / "tree")
        env = {**os.environ, "PYTHONPATH": str(tree)}
        cmd = [str(Path(sys.executable).with_name("lint-imports")),
               str(ROOT / "pyproject.toml"), "--no-cache", *argv[1:]]
        try:
            return subprocess.run(cmd, cwd=tree, env=env).returncode
        finally:
            shutil.rmtree(tree.parent, ignore_errors=True)
    print("usage: architecture.py tree DIR | lint-imports [ARGS]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
