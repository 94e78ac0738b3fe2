"""``RADIX_EVICT_COMPILE=0`` and ``make clean`` leave no compiled cache module importable.

In an editable install the extensions sit beside their sources
(``core/cache/*.so``) and are imported in their place, so a pure-Python
build must delete them. Checked on a copy in a temp folder: the real
checkout's build is in use.
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

from radix_evict.cache.compiled import COMPILED_MODULES, PAGE_KERNEL

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = EXTENSION_SUFFIXES[0]  # .cpython-311-x86_64-linux-gnu.so here


@pytest.fixture
def setup_py(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """setup.py's functions, loaded without running setup() (it runs as __main__ only)."""
    monkeypatch.chdir(ROOT)  # it reads core/cache/compiled.py relative to the checkout
    return runpy.run_path(str(ROOT / "setup.py"), run_name="radix_evict_setup_under_test")


def _built(folder: Path) -> tuple[set[str], set[str]]:
    """An editable build's extensions in ``folder``, and files that must survive."""
    folder.mkdir(parents=True)
    built = {f"{PAGE_KERNEL}{SUFFIX}"}
    for name in COMPILED_MODULES:
        built |= {f"{name}{SUFFIX}", f"{name}__mypyc{SUFFIX}"}
    kept = {f"{name}.py" for name in COMPILED_MODULES} | {f"{PAGE_KERNEL}.c", "other.txt"}
    for f in built | kept:
        (folder / f).write_text("x")
    return built, kept


def test_a_pure_python_build_removes_every_extension(
    setup_py: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, kept = _built(tmp_path / "core" / "cache")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RADIX_EVICT_COMPILE", "0")
    monkeypatch.setattr(sys, "argv", ["setup.py", "editable_wheel"])  # pip install -e .
    assert setup_py["compiled_extensions"]() == []
    assert {p.name for p in (tmp_path / "core" / "cache").iterdir()} == kept


def test_the_removal_names_what_it_removed(setup_py: dict[str, Any], tmp_path: Path) -> None:
    built, _kept = _built(tmp_path / "cache")
    assert sorted(setup_py["remove_inplace_builds"](tmp_path / "cache")) == sorted(built)
    assert setup_py["remove_inplace_builds"](tmp_path / "cache") == []


def test_metadata_runs_remove_nothing(
    setup_py: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built, kept = _built(tmp_path / "core" / "cache")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RADIX_EVICT_COMPILE", "0")
    monkeypatch.setattr(sys, "argv", ["setup.py", "egg_info"])
    assert setup_py["compiled_extensions"]() == []
    assert {p.name for p in (tmp_path / "core" / "cache").iterdir()} == built | kept


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_clean_removes_the_compiled_modules(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    _, kept = _built(tmp_path / "core" / "cache")
    (tmp_path / "build").mkdir()
    r = subprocess.run(["make", "-s", "clean"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in (tmp_path / "core" / "cache").iterdir()} == kept
    assert not (tmp_path / "build").exists()
