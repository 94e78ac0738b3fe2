"""Which hot-path modules run as mypyc-compiled extensions.

``setup.py`` compiles :data:`COMPILED_MODULES` when it can (see its docstring);
the same source runs interpreted otherwise. In an editable install the
extension sits beside its source and is imported in its place, so an edit to
the ``.py`` does nothing until the package is rebuilt: :func:`stale_modules`
finds such extensions and importing ``radix_evict`` warns about them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES

COMPILED_MODULES: tuple[str, ...] = (
    "args",
    "tree",
    "eviction",
    "ownership",
    "slots",
    "pool",
    "radix_cache",
)

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


def compiled_modules() -> list[str]:
    """The modules of :data:`COMPILED_MODULES` that were imported from an extension."""
    return [n for n in COMPILED_MODULES if _module_file(n).endswith(tuple(EXTENSION_SUFFIXES))]


def stale_modules() -> list[str]:
    """Compiled modules whose ``.py`` beside the extension was changed after the build."""
    stale = []
    for name in compiled_modules():
        ext = _module_file(name)
        src = os.path.join(os.path.dirname(ext), f"{name}.py")
        if os.path.exists(src) and os.path.getmtime(src) > os.path.getmtime(ext) + STALE_AFTER_S:
            stale.append(name)
    return stale


def describe() -> str:
    """One line for version output and benchmark headers."""
    done = compiled_modules()
    if not done:
        return "pure Python (no compiled modules)"
    if len(done) == len(COMPILED_MODULES):
        return "compiled (mypyc)"
    return f"partly compiled (mypyc: {', '.join(done)})"
