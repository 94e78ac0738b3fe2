"""Which hot-path modules run as mypyc-compiled extensions.

``setup.py`` compiles :data:`COMPILED_MODULES` when it can (see its docstring);
the same source runs interpreted otherwise. In an editable install the
extension sits beside its source and is imported in its place, so an edit to
the ``.py`` does nothing until the package is rebuilt: :func:`stale_modules`
finds such extensions and importing ``radix_evict`` warns about them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from types import ModuleType

COMPILED_MODULES: tuple[str, ...] = (
    "args",
    "tree",
    "eviction",
    "ownership",
    "slots",
    "pool",
    "host_tier",
    "radix_tree",
    "radix_cache",
)

# The per-page loops of the pool's owner checks and of its conversions between slots and
# pages, in C (``_page_kernel.c``): built with the modules above, used on cpu pools by
# ``ownership.PageOwners``, ``KVPool`` and ``SlotStorage`` (and by ``tree.common_prefix_len``),
# numpy standing in without it.
PAGE_KERNEL = "_page_kernel"

# Set to 1, the interpreted modules (and numpy for the page loops) are used even where
# compiled ones are installed (the test suite runs the cache's tests on both builds this way).
PURE_ENV = "RADIX_EVICT_PURE_PYTHON"

# A wheel install writes sources and extensions moments apart; an edit comes later.
STALE_AFTER_S = 10.0


def _module_file(name: str) -> str:
    """The file ``radix_evict.cache.<name>`` is (or would be) imported from.

    Found without importing it when it is not loaded yet, so that importing
    ``radix_evict`` (which checks for stale extensions) stays free of torch.
    """
    full = f"radix_evict.cache.{name}"
    module = sys.modules.get(full)
    if module is not None:
        return str(module.__file__ or "")
    spec = importlib.util.find_spec(full)
    return str(spec.origin or "") if spec is not None else ""


def pure_python_requested() -> bool:
    """Whether :data:`PURE_ENV` asks for the interpreted build."""
    return os.environ.get(PURE_ENV, "0") not in ("", "0")


def page_kernel() -> ModuleType | None:
    """The C page loops, or None where they were not built or :data:`PURE_ENV` is set."""
    if pure_python_requested():
        return None
    try:
        return importlib.import_module(f"radix_evict.cache.{PAGE_KERNEL}")
    except ImportError:
        return None


def compiled_modules() -> list[str]:
    """The modules of :data:`COMPILED_MODULES` that were imported from an extension."""
    return [n for n in COMPILED_MODULES if _module_file(n).endswith(tuple(EXTENSION_SUFFIXES))]


def stale_modules() -> list[str]:
    """Compiled modules whose ``.py`` beside the extension was changed after the build."""
    built = [(name, f"{name}.py") for name in compiled_modules()]
    if page_kernel() is not None:
        built.append((PAGE_KERNEL, f"{PAGE_KERNEL}.c"))
    stale = []
    for name, source in built:
        ext = _module_file(name)
        src = os.path.join(os.path.dirname(ext), source)
        if os.path.exists(src) and os.path.getmtime(src) > os.path.getmtime(ext) + STALE_AFTER_S:
            stale.append(name)
    return stale


def describe() -> str:
    """One line for version output and benchmark headers."""
    done = compiled_modules()
    loops = page_kernel() is not None
    if not done and not loops:
        return "pure Python (no compiled modules)"
    if len(done) == len(COMPILED_MODULES) and loops:
        return "compiled (mypyc, C page loops)"
    parts = [f"mypyc: {', '.join(done)}"] if done else []
    parts.append("C page loops" if loops else "no C page loops")
    return f"partly compiled ({'; '.join(parts)})"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the ``.py`` of a compiled module, ahead of the extension beside it."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != "radix_evict.cache" or name not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(self.folder, f"{name}.py")
        )


def remove_inplace_extensions(folder: str | os.PathLike[str]) -> list[str]:
    """Delete the compiled modules an earlier editable build left in ``folder``.

    Beside their sources they would shadow them and run the old code, so a
    build that falls back to pure Python (setup.py) removes them. Returns
    the files removed.
    """
    removed = []
    for name in COMPILED_MODULES:
        for suffix in EXTENSION_SUFFIXES:
            for stale in (f"{name}{suffix}", f"{name}__mypyc{suffix}"):
                path = os.path.join(folder, stale)
                if os.path.exists(path):
                    os.remove(path)
                    removed.append(stale)
    return removed


def prefer_interpreted() -> None:
    """Import the interpreted hot-path modules from now on (before they are first imported)."""
    if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst(os.path.dirname(os.path.abspath(__file__))))
