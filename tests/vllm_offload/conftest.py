"""vLLM 0.33.0's offload modules for the tests here that ask for ``vllm`` (skip if not built)."""

from __future__ import annotations

import types

import pytest
from helpers.vllm_env import import_vllm


@pytest.fixture(scope="session")
def vllm() -> types.ModuleType:
    return import_vllm()
