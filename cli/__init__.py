"""The ``radix-evict`` command line (typer): list, show, validate, lint, schema, simulate,
sglang, sweep.

Importing this package is cheap: ``app`` (the typer application) and ``main``
(the console script's body) load on first use, so ``__main__`` can import the
CLI's heavy dependencies (typer, torch) under its Ctrl-C guard.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import app, main

__all__ = ["app", "main"]

_APP_MODULE = f"{__name__}.app"


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_APP_MODULE)
    value = getattr(module, name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps ``radix_evict.cli.app`` the typer application, not the submodule of that name.

    Importing a submodule sets it as an attribute of its package; for ``app``
    that would replace the application that ``from radix_evict.cli import app``
    must return (the submodule stays importable by its full name).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "app" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
