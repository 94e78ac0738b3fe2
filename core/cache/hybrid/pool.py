"""Counted pools, one per component: full-attention tokens, window tokens, recurrent states.

The hybrid cache makes its decisions on counts (how many tokens or states each
node holds, how many are free), the way SGLang's unified tree counts them
(``reclaimable_value_len``): which slot a token sits in never changes a decision.
Each pool refuses to go below zero or above its size, so a slot freed twice or
never freed shows up as an error or as a leak in :meth:`HybridPools.check`.
"""

from __future__ import annotations

from radix_evict.cache.hybrid.node import COMPONENT_NAMES


class PoolAccountingError(RuntimeError):
    """A component's slots were freed twice or allocated past its size."""


class HybridPools:
    """Free counts of the full, SWA and Mamba pools, in their units (tokens, tokens, states).

    ``page_size`` applies to the token pools: their sizes are whole pages and
    every alloc and free is whole pages (the partial last page of a request is
    the caller's to round).
    """

    def __init__(self, full: int, swa: int = 0, mamba: int = 0, page_size: int = 1) -> None:
        for name, size in (("full", full), ("swa", swa), ("mamba", mamba)):
            if size < 0:
                raise ValueError(f"{name} pool size must be >= 0, got {size}")
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        self.page_size = page_size
        self.size = [full // page_size * page_size, swa // page_size * page_size, mamba]
        self.free_count = list(self.size)

    def available(self, component: int) -> int:
        return self.free_count[component]

    def can_alloc(self, component: int, n: int) -> bool:
        return n <= self.free_count[component]

    def alloc(self, component: int, n: int) -> None:
        if n < 0 or n > self.free_count[component]:
            raise PoolAccountingError(
                f"{COMPONENT_NAMES[component]} pool: alloc of {n} with "
                f"{self.free_count[component]} free"
            )
        self.free_count[component] -= n

    def free(self, component: int, n: int) -> None:
        if n < 0 or self.free_count[component] + n > self.size[component]:
            raise PoolAccountingError(
                f"{COMPONENT_NAMES[component]} pool: free of {n} with "
                f"{self.free_count[component]} of {self.size[component]} free (freed twice?)"
            )
        self.free_count[component] += n
