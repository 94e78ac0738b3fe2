"""The ``radix-evict`` command line (typer): list, show, validate, lint, schema, simulate,
sglang."""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]
