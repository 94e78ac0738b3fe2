"""The slot-allocator protocol the cache is written against.

Kept apart from :mod:`radix_evict.cache.pool` so the pool module can be compiled
(mypyc does not support ``runtime_checkable`` protocols) while the protocol
stays usable with ``isinstance``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Allocator(Protocol):
    """What :class:`~radix_evict.RadixCache` needs from a slot allocator."""

    page_size: int

    @property
    def device(self) -> torch.device: ...

    def alloc(self, n: int) -> torch.Tensor | None: ...

    def free(self, indices: torch.Tensor) -> None: ...

    def available_size(self) -> int: ...
