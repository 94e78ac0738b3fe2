"""Shared helpers for the core tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
import torch

from radix_evict import KVPool, RadixCache, registry


class Rig:
    """A cache over a cpu pool, with the engine-side steps tests repeat."""

    def __init__(
        self, size: int = 256, page_size: int = 1, policy: Any = "lru", config: Any = None
    ) -> None:
        self.pool = KVPool(size=size, page_size=page_size, device="cpu")
        self.cache = RadixCache(self.pool, policy=policy, policy_config=config)

    def insert(self, tokens: Sequence[int], priority: int = 0, inserted_len: int = 0) -> int:
        """Insert ``tokens`` as a request would: cached prefix reused, fresh slots for the rest."""
        m = self.cache.match_prefix(tokens)
        n = len(tokens) // self.pool.page_size * self.pool.page_size
        new = self.pool.alloc(n - m.prefix_len)
        assert new is not None, "test pool too small"
        row = torch.cat([m.indices, new])
        return self.cache.insert(
            list(tokens[:n]),
            row,
            priority=priority,
            prev_prefix_len=m.prefix_len,
            inserted_len=inserted_len,
        )

    def leaf_tokens(self) -> list[list[int]]:
        """The token runs of all nodes, for readable assertions."""
        return sorted(x.key.tolist() for x in self.cache.iter_nodes())


@pytest.fixture
def rig() -> Callable[..., Rig]:
    return Rig


@pytest.fixture
def only_builtin_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Third-party packages installed in the venv (the example) must not change what a test sees."""
    monkeypatch.setenv("RADIX_EVICT_PLUGINS", "")
    registry.reload()
    yield
    registry.reload()
