"""Build hook: compile the cache's hot-path modules with mypyc, and its C page loops.

Everything else about the package is declared in pyproject.toml. The compiled
modules are the same source files run as C extensions; the page loops
(``core/cache/_page_kernel.c``) do the pool's per-page owner checks in one
pass each. Without them the package is pure Python (numpy doing the page
checks) and behaves the same.

``RADIX_EVICT_COMPILE`` chooses: ``auto`` (default) compiles and falls back to
pure Python if the build fails, ``1`` makes a failed build an error, ``0``
skips compiling (for editing the compiled modules without rebuilding) and
removes the extensions an earlier build left beside the sources, which would
otherwise still be imported in their place.
"""

from __future__ import annotations

import os
import runpy
import shutil
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import Extension, setup

# The modules every request goes through; the rest of the package stays interpreted.
_LISTS = runpy.run_path(str(Path("core", "cache", "compiled.py")))
COMPILED_MODULES = _LISTS["COMPILED_MODULES"]
PAGE_KERNEL = _LISTS["PAGE_KERNEL"]
REMOVE_INPLACE = _LISTS["remove_inplace_extensions"]
CACHE_SOURCES = Path("core", "cache")


def remove_inplace_builds(folder: Path = CACHE_SOURCES) -> list[str]:
    """Delete every extension an earlier editable build left beside the cache's sources.

    The mypyc modules (``compiled.remove_inplace_extensions``) and the C page
    loops: either would be imported in place of the pure-Python build. Returns
    the files removed.
    """
    removed: list[str] = REMOVE_INPLACE(folder)
    for suffix in EXTENSION_SUFFIXES:
        path = folder / f"{PAGE_KERNEL}{suffix}"
        if path.exists():
            path.unlink()
            removed.append(path.name)
    return removed


def page_kernel_extension() -> Extension:
    """The C page loops of the pool's owner checks (plain C, the Python API only)."""
    return Extension(
        f"radix_evict.cache.{PAGE_KERNEL}",
        [str(Path("core", "cache", f"{PAGE_KERNEL}.c"))],
        extra_compile_args=["-O3"],
    )


# pip runs this file three times for one install: twice for metadata (egg_info,
# dist_info) and once to build. Only the build needs the extensions; generating them is
# minutes of mypy each time.
METADATA_COMMANDS = {"egg_info", "dist_info"}
BUILD_COMMANDS = {"build", "build_ext", "build_py", "bdist_wheel", "editable_wheel", "develop",
                  "install"}


def metadata_only() -> bool:
    """Whether this run only writes metadata (no extension is built)."""
    args = set(sys.argv[1:])
    return bool(args & METADATA_COMMANDS) and not args & BUILD_COMMANDS


def compiled_extensions() -> list[Extension]:
    mode = os.environ.get("RADIX_EVICT_COMPILE", "auto").strip().lower()
    if mode not in ("auto", "1", "0"):
        raise SystemExit(f"RADIX_EVICT_COMPILE must be auto, 1 or 0, got {mode!r}")
    if metadata_only():
        return []
    if mode == "0":  # a pure-Python build: nothing compiled may stay importable
        if removed := remove_inplace_builds():
            print(f"radix-evict: RADIX_EVICT_COMPILE=0, removed {', '.join(removed)}")
        return []
    extensions = [*mypyc_extensions(mode), page_kernel_extension()]
    for ext in extensions:
        ext.optional = mode == "auto"  # a failed compile leaves the pure-Python module
    return extensions


# The checkout's link to the package in its installed shape: core/ is radix_evict, and its
# links cli/ and builtin_policies/ stand where those install (pyproject's package-dir).
SHAPE_LINK = Path("src", "radix_evict")


def installed_shape_link() -> Path:
    """:data:`SHAPE_LINK`, made again where a copy of the tree lost it (an sdist)."""
    if not SHAPE_LINK.is_symlink():
        SHAPE_LINK.parent.mkdir(exist_ok=True)
        SHAPE_LINK.symlink_to(Path("..", "core"), target_is_directory=True)
    return SHAPE_LINK


def mypyc_extensions(mode: str) -> list[Extension]:
    """The compiled modules, or none (``auto`` mode, where mypyc is missing or fails)."""
    try:
        from mypyc.build import mypycify
    except ImportError:
        if mode == "1":
            raise
        REMOVE_INPLACE(Path("core", "cache"))
        return []
    # mypy names a module after its folders, and core/ installs as radix_evict: compile
    # through src/radix_evict, the checkout's link to core/ (the package in its installed
    # shape, which editors use too: docs/architecture.md), so the extensions get their
    # installed names.
    link = installed_shape_link()
    stage = Path("build", "mypyc-src")
    stage.mkdir(parents=True, exist_ok=True)
    sources = [str(link / "cache" / f"{name}.py") for name in COMPILED_MODULES]
    # The build env has no numpy or torch: their types are Any there, which also turns
    # ignores needed by the full type check (make typecheck) into "unused" ones.
    flags = ["--ignore-missing-imports", "--no-warn-unused-ignores"]
    # A fresh mypy cache each build: mypyc 1.x can crash on an incremental cache left by
    # an earlier build of edited sources ("ValueError: value is not in list"), and auto
    # mode would then quietly install pure Python. Each build is a full one (minutes).
    cache = stage / "mypy-cache"
    shutil.rmtree(cache, ignore_errors=True)
    flags += ["--cache-dir", str(cache)]
    try:
        return mypycify(sources + flags, opt_level="3", debug_level="0", separate=True)
    except (Exception, SystemExit) as e:  # mypyc reports type errors by exiting
        if mode == "1":
            raise
        print(f"radix-evict: not compiling ({type(e).__name__}: {e}); installing pure Python")
        REMOVE_INPLACE(Path("core", "cache"))
        return []


if __name__ == "__main__":  # as pip and setuptools run it (tests load its functions)
    setup(ext_modules=compiled_extensions())
