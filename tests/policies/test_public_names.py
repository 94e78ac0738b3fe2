"""Every subpackage says what is public: ``__all__`` names exist, and no module is left out.

For the packages whose public names are their modules (cache, policies,
sglang), ``__all__`` lists every module; for the others, every name in it
resolves.
"""

from __future__ import annotations

import importlib
import pkgutil

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
    modules = sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                     if not m.name.startswith("_"))
    assert sorted(package.__all__) == modules
