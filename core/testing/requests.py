"""Drive a cache the way a serving engine does, for tests that need a populated tree."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from radix_evict.cache.radix_cache import RadixCache


def insert_as_request(
    cache: RadixCache, tokens: Sequence[int], priority: int = 0, inserted_len: int = 0
) -> int:
    """Insert ``tokens`` as a finished request would; return what ``insert`` returns.

    The cached prefix is reused (its slots passed back as ``prev_prefix_len``)
    and the rest gets fresh slots from the cache's pool. Only the
    page-aligned part is inserted. Fails if the pool is too small, so a test
    never silently caches less than it asked for.
    """
    page = cache.page_size
    n = len(tokens) // page * page
    m = cache.match_prefix(tokens)
    new = cache.pool.alloc(n - m.prefix_len)
    assert new is not None, f"the test pool has fewer than {n - m.prefix_len} free slots"
    row = torch.cat([m.indices, new])
    return cache.insert(
        list(tokens[:n]),
        row,
        priority=priority,
        prev_prefix_len=m.prefix_len,
        inserted_len=inserted_len,
    )
