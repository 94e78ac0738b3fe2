"""The infinite-pool ceiling: the hit rate no eviction policy can exceed.

With room for everything nothing is evicted, so a request hits whatever
earlier requests had inserted by the time it arrives. This replays the same
event stream through the same cache with an allocator that never runs out;
the only operations left that decide hits are ``match_prefix`` at arrival and
``insert`` at finish (the prompt checkpoint insert adds no tokens: the prompt
is a prefix of the whole request).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from radix_evict.cache.radix_cache import RadixCache
from radix_evict.policies.contract import DEFAULT_POLICY
from radix_evict.sim.workloads import Workload

if TYPE_CHECKING:
    from radix_evict.sim.timed.spec import TimingSpec


class EndlessAllocator:
    """Fresh page-aligned slots forever; freed slots are simply forgotten."""

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self._next = 0

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def alloc(self, n: int) -> torch.Tensor:
        start = self._next
        self._next += -(-n // self.page_size) * self.page_size
        # numpy builds the row: torch.arange of large cpu tensors wakes torch's thread pool
        return torch.from_numpy(np.arange(start, start + n, dtype=np.int64))

    def free(self, indices: torch.Tensor) -> None:
        """Nothing to do: an endless pool never needs a slot back."""

    def available_size(self) -> int:
        return 2**62


@dataclass(frozen=True)
class Ceiling:
    """Prompt tokens an infinite pool would have served from the cache."""

    hit_tokens: int
    prompt_tokens: int

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hit_rate": self.hit_rate}


def infinite_pool_ceiling(workload: Workload, page_size: int = 1,
                          timing: TimingSpec | None = None) -> Ceiling:
    """Replay ``workload`` with a pool that never fills; count the prompt tokens hit.

    With ``timing``, the timed replay's ceiling: the same arrivals and scheduler
    with a pool that never fills. The timed replay shows a running request's
    prompt to others as soon as it is prefilled, so its hit rates can exceed
    the token replay's ceiling; this is the one they compare with.
    """
    P = page_size
    pool = EndlessAllocator(P)
    cache = RadixCache(pool, page_size=P, policy=DEFAULT_POLICY)
    if timing is not None:
        from radix_evict.sim.tally import Tally
        from radix_evict.sim.timed.run import serve

        tally = Tally(workload.num_requests, 0, False)
        serve(workload, cache, pool, P, timing, tally)
        return Ceiling(tally.hits, tally.prompts)
    hits = prompts = 0
    for _, kind, req in workload.events():
        if kind == "arrive":
            hits += cache.match_prefix(req.prompt).prefix_len
            prompts += len(req.prompt)
            continue
        full = req.tokens()
        L = len(full) // P * P
        if L:
            cache.insert(full[:L], pool.alloc(L))
    return Ceiling(hits, prompts)
