"""What many tests build: an in-process CLI run, a cache over a cpu pool, a snapshot of
everything a cache operation could change."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from radix_evict import KVPool, RadixCache
from radix_evict.cli import app
from radix_evict.testing import insert_as_request


def run_cli(*args: str) -> Result:
    """``radix-evict ARGS...`` in-process (stdout and stderr kept apart)."""
    return CliRunner().invoke(app, list(args))


def simulate_json(*args: str) -> dict[str, Any]:
    """``radix-evict simulate ARGS... --json``, which must succeed, parsed."""
    r = run_cli("simulate", *args, "--json")
    assert r.exit_code == 0, r.output
    data: dict[str, Any] = json.loads(r.stdout)
    return data


def cache_state(cache: RadixCache) -> dict[str, Any]:
    """Everything a cache operation could change, to show a refused call changed nothing.

    Every node and its fields, the eviction candidates, the sizes and counts,
    the clock, the call counters, and the owner of every slot of the pool.
    """
    nodes = sorted(
        (
            x.key.tolist(),
            cache.node_slots(x).tolist(),
            x.lock_ref,
            x.hit_count,
            x.priority,
            x.last_access_time,
            x.creation_time,
            x.history_len,
            x.prefix_len,
        )
        for x in cache.iter_nodes()
    )
    candidates = sorted(x.key.tolist() for x in cache.evictable_leaves())
    st = cache.stats
    pool = cache.pool
    return {
        "nodes": nodes,
        "candidates": candidates,
        "evictable": cache.evictable_size(),
        "protected": cache.protected_size(),
        "num_nodes": cache.num_nodes,
        "available": pool.available_size(),
        "owners": pool.slot_owners().tolist() if isinstance(pool, KVPool) else None,
        "root_time": cache.root.last_access_time,
        "clock": cache._clock,
        "calls": (st.insert_calls, st.match_calls, st.evict_calls, st.evicted_tokens),
    }


class Rig:
    """A cache over a cpu pool, with the engine-side steps tests repeat."""

    def __init__(
        self, size: int = 256, page_size: int = 1, policy: Any = "lru", config: Any = None
    ) -> None:
        self.pool = KVPool(size=size, page_size=page_size, device="cpu")
        self.cache = RadixCache(self.pool, policy=policy, policy_config=config)

    def insert(self, tokens: Sequence[int], priority: int = 0, inserted_len: int = 0) -> int:
        """Insert ``tokens`` as a request would: cached prefix reused, fresh slots for the rest."""
        return insert_as_request(self.cache, tokens, priority, inserted_len)

    def leaf_tokens(self) -> list[list[int]]:
        """The token runs of all nodes, for readable assertions."""
        return sorted(x.key.tolist() for x in self.cache.iter_nodes())
