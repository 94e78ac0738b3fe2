"""Every subpackage says what is public: ``__all__`` names exist, and no module is left out.

For the packages whose public names are their modules (cache, policies,
sglang), ``__all__`` lists every module; for the others, every name in it
resolves.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

MODULE_PACKAGES = ["radix_evict.cache", "radix_evict.policies", "radix_evict.sglang"]
PACKAGES = [*MODULE_PACKAGES, "radix_evict.testing", "radix_evict.builtin_policies",
            "radix_evict.cli"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_all_resolves(name: str) -> None:
    package = importlib.import_module(name)
    assert isinstance(package.__all__, list) and package.__all__
    assert len(set(package.__all__)) == len(package.__all__)
    for public in package.__all__:
        if not hasattr(package, public):
            importlib.import_module(f"{name}.{public}")  # a module, imported on demand
        assert hasattr(package, public), f"{name}.{public}"


@pytest.mark.parametrize("name", MODULE_PACKAGES)
def test_all_lists_every_public_module(name: str) -> None:
    package = importlib.import_module(name)
    # Sources, not whatever imports: a compiled build leaves extensions beside them.
    modules = sorted({p.stem for folder in package.__path__ for p in Path(folder).glob("*.py")
                      if not p.stem.startswith("_")})
    assert sorted(package.__all__) == modules
