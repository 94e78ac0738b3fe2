"""The house's arrows hold, and the checks that say so can fail.

import-linter checks the contracts in pyproject.toml (the layers, the
independent parts, and the few finer rules) over the package as it installs
(docs/gen/architecture.py builds that shape). What it cannot
express is checked here from the source: SGLang imported only lazily, the
CLI importing no private name of the core, an ``__all__`` in every package.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _architecture() -> ModuleType:
    spec = importlib.util.spec_from_file_location("radix_evict_docs_architecture",
                                                  ROOT / "docs" / "gen" / "architecture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


architecture = _architecture()


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return architecture.build_tree(tmp_path_factory.mktemp("shape") / "tree")


def test_every_contract_is_kept(tree: Path) -> None:
    r = lint_imports(tree)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "broken" not in r.stdout.lower().replace("0 broken", "")


def _break(tree: Path, module: str, line: str) -> None:
    """Append ``line`` to a real copy of ``module``'s file in ``tree`` (not the link)."""
    path = tree.joinpath(*module.split(".")).with_suffix(".py")
    if not path.exists():
        path = tree.joinpath(*module.split("."), "__init__.py")
    source = path.resolve().read_text(encoding="utf-8")
    path.unlink()
    path.write_text(source + "\n" + line + "\n", encoding="utf-8")


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("radix_evict.cache.tree", "import radix_evict.policies.registry",
     "cache (the hot path)"),
    ("radix_evict.sim.oracle", "from radix_evict.cli import app", "the layers"),
    ("radix_evict.sim.oracle", "import radix_evict.builtin_policies.frequency", "the layers"),
    ("radix_evict.cache.tree", "import radix_evict.sim.replay", "the layers"),
    ("radix_evict.policies.spec", "import radix_evict.cache.pool", "the layers"),
    ("radix_evict.errors", "import radix_evict.inputs", "the layers"),
    ("radix_evict.sglang.check", "import radix_evict.lint", "the layers"),
    ("radix_evict.engine.loop", "import radix_evict.sim", "are independent"),
    ("radix_evict.vllm.names", "import radix_evict.sglang.native", "are independent"),
    ("radix_evict.testing.checks", "import radix_evict.engine", "are independent"),
    ("radix_evict.lint.verdict", "import radix_evict.cache.pool", "lint (the config linter)"),
    ("radix_evict.policies.spec", "import sglang.srt", "SGLang is imported only"),
])
def test_a_deliberate_bad_import_is_reported(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    bad = architecture.build_tree(tmp_path / "tree")
    _break(bad, module, line)
    r = lint_imports(bad)
    assert r.returncode == 1, r.stdout[-3000:]
    broken = r.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and module in broken, r.stdout[-3000:]


def test_a_new_part_must_take_its_place_in_the_layers(tmp_path: Path) -> None:
    """The layers contract is exhaustive: a top-level module it does not place breaks it."""
    bad = architecture.build_tree(tmp_path / "tree")
    (bad / "radix_evict" / "newpart.py").write_text("import radix_evict.errors\n")
    r = lint_imports(bad)
    assert r.returncode == 1 and "newpart" in r.stdout, r.stdout[-3000:]


def test_src_is_the_package_in_its_installed_shape() -> None:
    """src/radix_evict (a committed link to core/) is where tools run on the checkout
    resolve radix_evict.* imports: each package of pyproject's package-dir table is there."""
    for name, folder in architecture.package_dirs().items():
        assert ROOT.joinpath("src", *name.split(".")).resolve() == folder.resolve(), name
    r = subprocess.run(
        [sys.executable, "-c", "import radix_evict.cli.app, radix_evict.builtin_policies.tlru "
         "as m; print(m.__file__)"],
        cwd="/", env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == str(ROOT / "src" / "radix_evict" / "builtin_policies" / "tlru.py")


def _python_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> Iterator[tuple[ast.stmt, str, list[str], bool]]:
    """(node, module, names, at module level) for every import statement of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, [], id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node, node.module, [a.name for a in node.names], id(node) in top


def test_sglang_is_imported_lazily_inside_radix_evict_sglang() -> None:
    eager = [f"{p.relative_to(ROOT)}:{node.lineno}"
             for p in _python_files(ROOT / "core" / "sglang")
             for node, module, _, top in _imports(p)
             if top and module.split(".")[0] == "sglang"]
    assert not eager, f"SGLang imported at module level (radix-evict must run without it): {eager}"


def test_the_cli_imports_no_private_name_of_the_core() -> None:
    private = []
    for p in _python_files(ROOT / "cli"):
        for node, module, names, _ in _imports(p):
            if not module.startswith("radix_evict.") or module.startswith("radix_evict.cli"):
                continue
            hidden = [part for part in module.split(".") if part.startswith("_")]
            hidden += [n for n in names if n.startswith("_")]
            if hidden:
                private.append(f"{p.relative_to(ROOT)}:{node.lineno} {module} {hidden}")
    assert not private, "\n".join(private)


def _packages() -> Iterator[str]:
    """Every package of radix_evict, from the source folders the install maps."""
    for name, folder in architecture.package_dirs().items():
        for init in sorted(folder.rglob("__init__.py")):
            rel = init.parent.relative_to(folder).parts
            yield ".".join((name, *rel))


def _is_submodule(package: str, name: str) -> bool:
    try:
        importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("package", sorted(set(_packages())))
def test_every_package_declares_its_public_names(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    assert isinstance(names, (list, tuple)) and names, f"{package} has no __all__"
    missing = [n for n in names if not hasattr(module, n) and not _is_submodule(package, n)]
    assert not missing, f"{package}.__all__ names what it does not define: {missing}"


def test_the_architecture_page_shows_the_arrows_the_code_has() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    want = architecture.render(architecture.module_graph()).strip()
    assert want in page, "run `python docs/generate.py all` and commit the result"


def test_the_graph_sees_a_new_arrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The diagram is computed, not drawn: an import added to the code appears in it."""
    before = architecture.part_graph()
    assert "cli" not in before["sim"]
    real = architecture.build_tree

    def with_bad_import(dest: Path, root: Path = ROOT) -> Path:
        out = real(dest, root)
        _break(out, "radix_evict.sim.oracle", "import radix_evict.cli")
        return out

    monkeypatch.setattr(architecture, "build_tree", with_bad_import)
    assert "cli" in architecture.part_graph()["sim"]
