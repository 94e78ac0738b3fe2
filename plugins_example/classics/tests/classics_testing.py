"""Helpers for these tests: a small cache, requests into it, looks that touch nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from radix_evict import KVPool, RadixCache
from radix_evict.testing import insert_as_request


def make_cache(policy: Any, config: Any = None, size: int = 64, page: int = 1) -> RadixCache:
    pool = KVPool(size=size, page_size=page, device="cpu")
    if isinstance(policy, str):
        return RadixCache(pool, policy=policy, policy_config=config)
    return RadixCache(pool, policy=policy)


def put(cache: RadixCache, tokens: Sequence[int]) -> None:
    """A finished request: look up its prefix (a lookup hit, if any), insert the rest."""
    insert_as_request(cache, list(tokens))


def lookup(cache: RadixCache, tokens: Sequence[int]) -> int:
    """A request's lookup (``match_prefix``): the policy hears ``on_hit``."""
    return cache.match_prefix(list(tokens)).prefix_len


def cached_len(cache: RadixCache, tokens: Sequence[int]) -> int:
    """How many leading tokens the tree holds, read without a lookup (no stamp, no on_hit)."""
    arr = np.asarray(tokens, dtype=np.int64)
    page = cache.page_size
    node = cache.root
    off = 0
    while off + page <= len(arr):
        child = node.children.get(arr[off:off + page].tobytes())
        if child is None:
            break
        key = child.key
        n = min(len(key), len(arr) - off)
        diff = np.flatnonzero(key[:n] != arr[off:off + n])
        same = int(diff[0]) if len(diff) else n
        off += same
        if same < len(key):
            break
        node = child
    return off


def holds(cache: RadixCache, tokens: Sequence[int]) -> bool:
    return cached_len(cache, tokens) == len(tokens)


def node_of(cache: RadixCache, tokens: Sequence[int]) -> Any:
    """The node that ends exactly at ``tokens`` (read without a lookup)."""
    arr = np.asarray(tokens, dtype=np.int64)
    for node in cache.iter_nodes():
        if node.prefix_len == len(arr):
            path = []
            x = node
            while x.parent is not None:
                path.append(x.key)
                x = x.parent
            if np.array_equal(np.concatenate(path[::-1]), arr):
                return node
    raise LookupError(f"no node ends at {list(tokens)}")


def evict_order(cache: RadixCache, prompts: Sequence[Sequence[int]], times: int) -> list[int]:
    """Evict ``times`` single nodes; which of ``prompts`` went, in order (index per eviction)."""
    gone: list[int] = []
    for _ in range(times):
        before = [holds(cache, p) for p in prompts]
        cache.evict(1)
        after = [holds(cache, p) for p in prompts]
        lost = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b and not a]
        assert len(lost) == 1, (before, after)
        gone.append(lost[0])
    return gone


def put_without_lookup(cache: RadixCache, tokens: Sequence[int]) -> None:
    """Insert a request's tokens reusing the cached prefix without a lookup (no ``on_hit``)."""
    import torch

    arr = np.asarray(tokens, dtype=np.int64)
    page = cache.page_size
    node = cache.root
    off = 0
    slots = []
    while off + page <= len(arr):
        child = node.children.get(arr[off:off + page].tobytes())
        if child is None:
            break
        key = child.key
        n = min(len(key), len(arr) - off)
        diff = np.flatnonzero(key[:n] != arr[off:off + n])
        same = int(diff[0]) if len(diff) else n
        slots.append(cache.node_slots(child)[:same])
        off += same
        if same < len(key):
            break
        node = child
    new = cache.pool.alloc(len(arr) - off)
    assert new is not None
    cache.insert(arr, torch.cat([*slots, new]), prev_prefix_len=off)


FILLER = list(range(1000, 1016))  # 16 tokens that stay: the cache's size is what ghosts scale by


def pin(cache: RadixCache, tokens: Sequence[int] = FILLER) -> None:
    """Cache ``tokens`` and lock them, as a running request would: never evicted."""
    put(cache, tokens)
    cache.inc_lock_ref(cache.match_prefix(list(tokens)).last_node)
