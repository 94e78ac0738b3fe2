"""Driving SGLang 0.5.23's own radix caches in tests (after ``sglang_env.import_sglang()``).

Both sides of a differential replay allocate from radix-evict's ``KVPool``: SGLang's
caches get it through :class:`PoolAllocator`, which adds the few allocator methods they
call. A slot freed twice or never freed therefore fails the test on either side.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
import torch

from radix_evict import KVPool

SGLANG_TREES = ("unified-py", "unified-rust", "legacy")


class PoolAllocator:
    """radix-evict's KVPool as SGLang's token-to-KV allocator (CPU, index-only)."""

    def __init__(self, size: int, page_size: int = 1) -> None:
        self.pool = KVPool(size=size, page_size=page_size, device="cpu", layers=0)
        self.size = size
        self.page_size = page_size
        self.device = torch.device("cpu")

    def available_size(self) -> int:
        return self.pool.available_size()

    def alloc(self, n: int) -> torch.Tensor | None:
        return self.pool.alloc(n)

    def free(self, indices: torch.Tensor) -> None:
        if indices.numel():
            self.pool.free(indices)

    # The cache frees through these too; a plain pool has one kind of slot.
    def free_segment(self, indices: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(indices)

    def free_full_segment(self, indices: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(indices)

    def free_full(self, indices: torch.Tensor) -> None:
        self.free(indices)

    def mamba_full_cache_donor(self) -> None:  # no Mamba state here
        return None


def build_sglang_cache(
    tree: str,
    allocator: PoolAllocator,
    policy: str = "lru",
    config: dict[str, Any] | None = None,
) -> Any:
    """SGLang's cache of kind ``tree`` (one of SGLANG_TREES) over ``allocator``."""
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.radix_cache import RadixCache
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
    from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

    common: dict[str, Any] = dict(
        disable=False,
        req_to_token_pool=None,
        token_to_kv_pool_allocator=allocator,
        page_size=allocator.page_size,
        eviction_policy=policy,
        eviction_policy_config=config,
    )
    if tree == "legacy":
        return RadixCache(CacheInitParams(**common))
    if tree not in SGLANG_TREES:
        raise ValueError(f"unknown SGLang tree {tree!r}; one of {SGLANG_TREES}")
    backend = "python" if tree == "unified-py" else "rust"
    return UnifiedRadixCache(
        CacheInitParams(**common, tree_components=(ComponentType.FULL,), tree_core_backend=backend)
    )


def radix_key(tokens: Any) -> Any:
    """SGLang's key type for ``tokens`` (int64 ``array('q')`` inside a RadixKey)."""
    from sglang.srt.mem_cache.radix_cache import RadixKey

    arr = array("q")
    arr.frombytes(np.ascontiguousarray(tokens, dtype=np.int64).tobytes())
    return RadixKey(arr)
