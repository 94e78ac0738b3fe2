"""One request stream through a cache, as an engine drives it, recording every decision.

The cuda tests and their CPU stand-in compare a pool on one device with a
pool on another by what this records: each lookup's hit and slots, each
eviction's count, and the counters at the end. Slots are compared as
integers on the host, so two pools on different devices can be equal.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from radix_evict import HostTierSpec, KVPool, RadixCache


def prompts(n: int = 300, seed: int = 0) -> list[list[int]]:
    """Prompts with shared system prefixes and growing conversations."""
    rng = random.Random(seed)
    systems = [[rng.randrange(1000) for _ in range(rng.randrange(20, 80))] for _ in range(6)]
    convs: list[list[int]] = []
    out = []
    for _ in range(n):
        if convs and rng.random() < 0.5:
            conv = rng.choice(convs)
            conv += [rng.randrange(1000) for _ in range(rng.randrange(5, 40))]
        else:
            conv = list(rng.choice(systems)) + [rng.randrange(1000) for _ in range(10)]
            convs.append(conv)
        out.append(list(conv))
    return out


def replay(
    pool: KVPool, policy: str = "lru", n: int = 300, host: HostTierSpec | None = None
) -> list[Any]:
    """Match, lock, evict for room, alloc, insert, unlock and free the tail, per prompt.

    With ``host``, a match that reaches host-only KV loads it back first.
    """
    cache = RadixCache(pool, policy=policy, host_tier=host)
    P = pool.page_size
    seen: list[Any] = []
    for prompt in prompts(n):
        m = cache.match_prefix(prompt)
        if m.host_len and m.host_node is not None:
            loaded = cache.load_back(m.host_node)
            seen.append(("loaded", None if loaded is None else loaded.cpu().tolist()))
            m = cache.match_prefix(prompt)
        assert m.indices.device == pool.device, (m.indices.device, pool.device)
        cache.inc_lock_ref(m.last_node)
        need = -(-(len(prompt) - m.prefix_len) // P) * P
        short = need - pool.available_size()
        evicted = cache.evict(short) if short > 0 else 0
        new = pool.alloc(need)
        seen.append((m.prefix_len, m.indices.cpu().tolist(), evicted, new is None))
        if new is None:
            cache.dec_lock_ref(m.last_node)
            continue
        assert new.device == pool.device
        row = torch.cat([m.indices, new])
        aligned = len(prompt) // P * P
        cache.insert(prompt[:aligned], row[:aligned], prev_prefix_len=m.prefix_len)
        if len(row) > aligned:
            pool.free(row[aligned:])
        cache.dec_lock_ref(m.last_node)
    stats = cache.stats
    seen.append((stats.hit_tokens, stats.evicted_tokens, pool.available_size()))
    return seen
