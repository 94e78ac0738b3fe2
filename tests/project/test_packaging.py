"""The wheel layout the api page asks for: only ``radix_evict/``, every subpackage included."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the tomli backport, a dependency there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "radix_evict": "core",
    "radix_evict.builtin_policies": "builtin_policies",
    "radix_evict.cli": "cli",
}


def setuptools_table() -> dict[str, object]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    table: dict[str, object] = data["tool"]["setuptools"]
    return table


def test_folders_install_under_radix_evict_only() -> None:
    table = setuptools_table()
    assert table["package-dir"] == FOLDERS
    packages = table["packages"]
    assert isinstance(packages, list)
    assert all(p == "radix_evict" or p.startswith("radix_evict.") for p in packages)


def test_every_subpackage_is_listed() -> None:
    packages = setuptools_table()["packages"]
    assert isinstance(packages, list)
    found = set(FOLDERS)
    for name, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if rel.parts:
                found.add(".".join((name, *rel.parts)))
    assert found == set(packages), (
        f"pyproject packages differ from the folders: {found ^ set(packages)}"
    )


def test_public_names_load_lazily_and_all_resolve() -> None:
    """``import radix_evict`` is light (no torch: the CLI guards its own slow imports)."""
    import subprocess

    import radix_evict

    lazy = radix_evict._LAZY  # type: ignore[attr-defined]
    assert set(lazy) == set(radix_evict.__all__) - {"__version__"}
    for name in radix_evict.__all__:
        assert getattr(radix_evict, name) is not None
    code = "import sys, radix_evict; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
