"""The compiled-module bookkeeping: one list of modules, and stale builds are noticed."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

from radix_evict.cache import compiled

ROOT = Path(__file__).resolve().parents[1]


def test_setup_and_makefile_compile_the_listed_modules() -> None:
    setup_src = (ROOT / "setup.py").read_text()
    assert 'run_path(str(Path("core", "cache", "compiled.py")))["COMPILED_MODULES"]' in setup_src
    m = re.search(r"COMPILED := .*addsuffix \.py,([a-z_ ]+)\)", (ROOT / "Makefile").read_text())
    assert m is not None, "Makefile lost its COMPILED list"
    assert tuple(m.group(1).split()) == compiled.COMPILED_MODULES
    listed = runpy.run_path(str(ROOT / "core" / "cache" / "compiled.py"))["COMPILED_MODULES"]
    assert listed == compiled.COMPILED_MODULES
    for name in compiled.COMPILED_MODULES:
        assert (ROOT / "core" / "cache" / f"{name}.py").exists()


def test_compiled_modules_are_the_ones_loaded_from_extensions() -> None:
    done = compiled.compiled_modules()
    assert set(done) <= set(compiled.COMPILED_MODULES)
    for name in compiled.COMPILED_MODULES:
        assert (name in done) == (not compiled._module_file(name).endswith(".py"))
    assert compiled.describe() in (
        "compiled (mypyc)",
        "pure Python (no compiled modules)",
    ) or compiled.describe().startswith("partly compiled")


def test_a_source_edited_after_the_build_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ext = tmp_path / "radix_cache.cpython-311-x86_64-linux-gnu.so"
    src = tmp_path / "radix_cache.py"
    ext.write_bytes(b"")
    src.write_text("")
    files = {"radix_cache": str(ext)}
    monkeypatch.setattr(compiled, "_module_file", lambda n: files.get(n, f"/x/{n}.py"))
    monkeypatch.setattr(compiled, "EXTENSION_SUFFIXES", [".cpython-311-x86_64-linux-gnu.so"])
    built = ext.stat().st_mtime
    os.utime(src, (built + 1, built + 1))  # written with the build (a wheel install)
    assert compiled.compiled_modules() == ["radix_cache"]
    assert compiled.stale_modules() == []
    os.utime(src, (built + 600, built + 600))  # edited ten minutes later
    assert compiled.stale_modules() == ["radix_cache"]
    assert compiled.describe() == "partly compiled (mypyc: radix_cache)"
