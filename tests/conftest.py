"""Fixtures for every test folder; plain helpers live in ``tests/helpers/``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from click.testing import Result
from helpers.rigs import Rig, run_cli

from radix_evict import registry


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``cuda`` skip, saying why, where torch sees no GPU.

    bench/gpu_check.py runs them on a GPU machine.
    """
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="cuda: torch.cuda.is_available() is False on this machine")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture
def rig() -> Callable[..., Rig]:
    return Rig


@pytest.fixture
def cli() -> Callable[..., Result]:
    return run_cli


@pytest.fixture
def only_builtin_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Third-party packages installed in the venv (the example) must not change what a test sees."""
    monkeypatch.setenv("RADIX_EVICT_PLUGINS", "")
    registry.reload()
    yield
    registry.reload()
