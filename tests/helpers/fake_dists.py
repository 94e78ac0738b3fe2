"""Fake installed distributions for plugin tests: ``.dist-info`` folders on ``sys.path``.

``importlib.metadata`` finds them exactly as it finds a pip-installed
package, so discovery, distribution names and versions, and import failures
are exercised for real.
"""

from __future__ import annotations

import importlib
import itertools
import re
import sys
import textwrap
from pathlib import Path

import pytest

GROUP = "radix_evict.policies"
_counter = itertools.count()

POLICY_MODULE = '''
from radix_evict import EvictionPolicy, PolicySpec, hookimpl


class FakePolicy(EvictionPolicy):
    name = {name!r}

    def score(self, node):
        return node.last_access_time


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name={name!r}, policy=FakePolicy, summary="a fake policy"))
'''


def policy_module(name: str, extend: tuple[str, ...] = ()) -> str:
    """Source of a plugin module that registers one LRU-like policy called ``name``."""
    src = POLICY_MODULE.format(name=name)
    if extend:
        src += (
            "\n\n@hookimpl\ndef radix_evict_extend_choices(extend):\n"
            f"    extend(*{list(extend)!r})\n"
        )
    return src


class FakeSite:
    """A site-packages folder of fake distributions, prepended to ``sys.path``."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))
        self.modules: list[str] = []

    def add(self, dist: str, version: str, entry_points: dict[str, str]) -> dict[str, str]:
        """Install ``dist`` with one module per entry point (``ep name -> module source``).

        Returns ``ep name -> module name`` (module names are unique per call).
        """
        slug = re.sub(r"[^a-z0-9]+", "_", dist.lower())
        info = self.root / f"{slug}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        lines = [f"[{GROUP}]"]
        names: dict[str, str] = {}
        for ep, source in entry_points.items():
            module = f"{slug}_{re.sub(r'[^a-z0-9]+', '_', ep)}_{next(_counter)}"
            (self.root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            lines.append(f"{ep} = {module}")
            names[ep] = module
            self.modules.append(module)
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        importlib.invalidate_caches()
        return names

    def cleanup(self) -> None:
        for module in self.modules:
            sys.modules.pop(module, None)
