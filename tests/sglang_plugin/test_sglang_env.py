"""The SGLang test environment itself: SGLang 0.5.23's real code imports and runs on CPU."""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

import pytest
from helpers import sglang_env
from helpers.sglang_env import SGLANG_VERSION, import_sglang
from helpers.sglang_rig import PoolAllocator, build_sglang_cache, radix_key


@pytest.fixture(scope="module")
def sglang():  # type: ignore[no-untyped-def]
    return import_sglang()


def test_the_unpacked_wheel_is_the_pinned_version(sglang) -> None:  # type: ignore[no-untyped-def]
    assert importlib.metadata.version("sglang") == SGLANG_VERSION
    assert sglang.__path__[0].endswith("sglang")


@pytest.mark.parametrize(
    "module",
    [
        "sglang.srt.plugins",
        "sglang.srt.mem_cache.utils",
        "sglang.srt.arg_groups.choices",
        "sglang.srt.arg_groups.kv_cache_hook",
        "sglang.srt.mem_cache.radix_cache",
        "sglang.srt.mem_cache.unified_radix_cache",
        "sglang.srt.mem_cache.unified_cache.tree_core_registry",
    ],
)
def test_the_modules_the_integration_uses_import(sglang, module: str) -> None:  # type: ignore[no-untyped-def]
    assert importlib.import_module(module).__file__.startswith(sglang.__path__[0])


def test_sglangs_unified_python_tree_caches_and_evicts(sglang) -> None:  # type: ignore[no-untyped-def]
    from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams

    slots = PoolAllocator(8)
    cache = build_sglang_cache("unified-py", slots)
    row = slots.alloc(3)
    cache.insert(InsertParams(key=radix_key([1, 2, 3]), value=row))
    m = cache.match_prefix(MatchPrefixParams(key=radix_key([1, 2, 9])))
    assert m.device_prefix_len == 2
    assert cache.evict_for_alloc(EvictParams(num_tokens=3)).num_tokens_evicted == 3
    assert slots.available_size() == 8


def test_without_the_environment_tests_skip_naming_the_build_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sglang_env, "SRC_DIR", tmp_path / "nothing")
    with pytest.raises(pytest.skip.Exception, match="run: make sglang-env"):
        sglang_env.import_sglang()
