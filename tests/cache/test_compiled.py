"""The compiled-module bookkeeping: one list of modules, and stale builds are noticed."""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest

from radix_evict.cache import compiled

ROOT = Path(__file__).resolve().parents[2]


def test_setup_and_makefile_compile_the_listed_modules() -> None:
    setup_src = (ROOT / "setup.py").read_text()
    assert 'run_path(str(Path("core", "cache", "compiled.py")))' in setup_src
    assert '_LISTS["COMPILED_MODULES"]' in setup_src and '_LISTS["PAGE_KERNEL"]' in setup_src
    makefile = (ROOT / "Makefile").read_text()
    m = re.search(r"COMPILED := .*addsuffix \.py,([a-z_ ]+)\)", makefile)
    assert m is not None, "Makefile lost its COMPILED list"
    assert tuple(m.group(1).split()) == compiled.COMPILED_MODULES
    kernel_source = f"core/cache/{compiled.PAGE_KERNEL}.c"
    assert (ROOT / kernel_source).exists()
    assert re.search(r"^\$\(STAMP\):.*" + re.escape(kernel_source), makefile, re.M), (
        "an edit to the C page loops must rebuild the install"
    )
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
        "compiled (mypyc, C page loops)",
        "pure Python (no compiled modules)",
    ) or compiled.describe().startswith("partly compiled")


def test_the_interpreted_build_uses_numpy_for_the_page_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert compiled.page_kernel() is None
    monkeypatch.setenv(compiled.PURE_ENV, "0")
    loaded = compiled.page_kernel()
    if compiled.compiled_modules():  # a compiled install builds the loops with the modules
        assert loaded is not None and loaded.__name__.endswith(compiled.PAGE_KERNEL)


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
    monkeypatch.setattr(compiled, "page_kernel", lambda: None)
    assert compiled.describe() == "partly compiled (mypyc: radix_cache; no C page loops)"


def test_a_fallback_build_removes_stale_inplace_extensions(tmp_path: Path) -> None:
    suffix = compiled.EXTENSION_SUFFIXES[0]
    stale = [f"pool{suffix}", f"pool__mypyc{suffix}", f"radix_cache{suffix}"]
    for name in [*stale, "pool.py", f"{compiled.PAGE_KERNEL}{suffix}", "other.so"]:
        (tmp_path / name).write_bytes(b"")
    assert sorted(compiled.remove_inplace_extensions(tmp_path)) == sorted(stale)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["pool.py", f"{compiled.PAGE_KERNEL}{suffix}", "other.so"])
    setup_src = (ROOT / "setup.py").read_text()
    assert setup_src.count('REMOVE_INPLACE(Path("core", "cache"))') == 2  # both fallbacks
