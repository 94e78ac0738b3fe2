"""Change an SGLang module only once SGLang itself imports it, and undo every change.

SGLang runs its plugins in every process (launch_server, scheduler, detokenizer, ...),
and some of the modules the plugin changes are expensive to import (the strategy
registry pulls in the KV kernels). So the plugin never imports them itself:
:func:`when_imported` runs the change at once if the module is already loaded, and
otherwise right after SGLang's own import of it finishes. :class:`Changes` remembers the
original values so tests (and a second configuration in one process) can put them back.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

Patch = Callable[[types.ModuleType], None]


class _PatchingLoader(importlib.abc.Loader):
    """Wraps a module's real loader: executes it, puts it back, then runs the patches."""

    def __init__(self, loader: Any, patches: list[Patch]) -> None:
        self._loader = loader
        self._patches = patches

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        if spec is not None:
            spec.loader = self._loader  # the module keeps its real loader (get_source, ...)
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        for patch in self._patches:
            patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, is_package, ...
        return getattr(self._loader, name)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Finds a watched module with the finders after it and wraps its loader (one shot)."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Patch]] = {}
        self._lock = threading.Lock()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.pending:
            return None
        with self._lock:
            patches = self.pending.pop(fullname, None)
        if patches is None:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            with self._lock:  # not importable (or an old-style loader): try again next time
                self.pending.setdefault(fullname, []).extend(patches)
            return spec
        spec.loader = _PatchingLoader(spec.loader, patches)
        return spec

    def cancel(self, fullname: str, patch: Patch) -> None:
        with self._lock:
            patches = self.pending.get(fullname, [])
            if patch in patches:
                patches.remove(patch)
            if not patches:
                self.pending.pop(fullname, None)


_watcher = _ImportWatcher()


def when_imported(module_name: str, patch: Patch) -> None:
    """Run ``patch(module)`` now if ``module_name`` is loaded, else right after its import."""
    module = sys.modules.get(module_name)
    if module is not None:
        patch(module)
        return
    with _watcher._lock:
        _watcher.pending.setdefault(module_name, []).append(patch)
    if _watcher not in sys.meta_path:
        sys.meta_path.insert(0, _watcher)


def cancel(module_name: str, patch: Patch) -> None:
    """Forget a patch that has not run yet."""
    _watcher.cancel(module_name, patch)


_MISSING = object()


class Changes:
    """The attributes and list items the plugin changed, so they can all be put back."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set_attr(self, obj: Any, name: str, value: Any) -> None:
        old = obj.__dict__.get(name, _MISSING) if hasattr(obj, "__dict__") else _MISSING

        def undo() -> None:
            if old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)

        setattr(obj, name, value)
        self._undo.append(undo)

    def set_item(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        old = mapping.get(key, _MISSING)

        def undo() -> None:
            if old is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = old

        mapping[key] = value
        self._undo.append(undo)

    def append(self, items: list[Any], value: Any) -> None:
        items.append(value)
        self._undo.append(lambda: items.remove(value) if value in items else None)

    def on_undo(self, fn: Callable[[], None]) -> None:
        self._undo.append(fn)

    def undo_all(self) -> None:
        while self._undo:
            self._undo.pop()()
