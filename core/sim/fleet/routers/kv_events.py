"""NVIDIA Dynamo's KV router cost over the replicas' real caches and loads.

Dynamo's KV router hears each worker's cache events (blocks stored, blocks
removed), so it knows how much of a prompt each worker holds; it also tracks
the blocks and prefill tokens of the requests it has in flight on each worker.
Its default selector then scores every worker and takes the cheapest. Facts
from ai-dynamo/dynamo at commit db19bd2a, ``lib/llm/src/kv_router/scheduler.rs``
(``sched.rs`` below):

* cost = ``overlap_score_weight * prefill_tokens / block_size + decode_blocks``,
  lower is better (``sched.rs:442-452``), where for each worker
  ``prefill_tokens`` is the prefill it would have with the request on it: its
  active prefill tokens plus the request's tokens not cached there,
  ``isl - overlap_blocks * block_size``; and ``decode_blocks`` is the blocks it
  would hold: its active blocks plus the request's blocks it lacks
  (``ActiveSequences::potential_blocks_and_tokens`` and ``new_tokens`` in
  ``lib/llm/src/kv_router/sequence.rs``). The request's own size is
  ``ceil(isl / block_size)`` blocks (``sched.rs:414``).
* ``router_temperature`` 0: every worker of least cost is a candidate
  (``sched.rs:334-347``); several are split by the smaller cache tree, then at
  random (``sched.rs:475-492``). Above 0: costs are divided by their range,
  negated, divided by the temperature and softmax-sampled (``sched.rs:349-383``);
  equal costs are drawn uniformly.
* Defaults: ``overlap_score_weight`` 1.0, ``router_temperature`` 0.0
  (``KvRouterConfig::default`` in ``lib/llm/src/kv_router.rs``; Dynamo's docs,
  ``docs/router/kv_cache_routing.md``: "Defaults to 1", "0 (default)").

Here the replicas' views supply what the events and the active-sequence
tracker give Dynamo: ``cached_prefix(key)`` is the cached prefix in tokens,
counted in whole blocks as Dynamo's block hashes are (``overlap_blocks =
cached // block_size``); ``pending_prefill_tokens`` is the active prefill,
``active_kv_tokens`` (in blocks, rounded up) the active blocks. The request's
new blocks are its blocks minus the overlap, as Dynamo's first scheduler
charged them (``required_blocks - overlap_blocks``). Ties at temperature 0 go
to a seeded random draw among them: the views give no cache-tree size.
``block_size`` is the backend's (Dynamo's ``--kv-cache-block-size``); 16 is
vLLM's default.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from pydantic import Field

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig

__all__ = ["KvEventsConfig", "KvEventsRouter", "softmax_pick"]


class KvEventsConfig(RouterConfig):
    """The ``kv_events`` router's settings; defaults are Dynamo's ``KvRouterConfig`` defaults."""

    overlap_score_weight: float = Field(
        1.0, ge=0.0, description="weight of prefill blocks against decode blocks in the cost")
    router_temperature: float = Field(
        0.0, ge=0.0, description="0: least cost; above 0: softmax sampling of the costs")
    block_size: int = Field(16, ge=1, description="tokens per KV block (the backend's)")


def softmax_pick(costs: Sequence[float], temperature: float, rng: random.Random) -> int:
    """Dynamo's ``softmax_sample`` over ``costs`` (lower is better), then one draw.

    Temperature 0: a uniform draw among the least costs. Otherwise each cost is
    divided by the costs' range, negated and divided by the temperature; the
    softmax of that is sampled by one uniform draw against the running sum
    (``sched.rs:349-383``). Equal costs everywhere: uniform.
    """
    low = min(costs)
    if temperature == 0.0:
        tied = [i for i, c in enumerate(costs) if c == low]
        return tied[0] if len(tied) == 1 else tied[rng.randrange(len(tied))]
    spread = max(costs) - low
    if spread == 0.0:
        return rng.randrange(len(costs))
    scaled = [-(c / spread) / temperature for c in costs]
    top = max(scaled)
    weights = [math.exp(s - top) for s in scaled]
    total = sum(weights)
    draw = rng.random()
    running = 0.0
    for i, w in enumerate(weights):
        running += w / total
        if draw <= running:
            return i
    return len(costs) - 1


class KvEventsRouter(Router):
    """Least Dynamo cost: prefill the request would add plus the decode blocks it would hold."""

    name = "kv_events"
    config_model = KvEventsConfig

    def __init__(self, config: KvEventsConfig, *, replicas: int, seed: int = 0) -> None:
        super().__init__(config, replicas=replicas, seed=seed)
        self.settings = config
        self.rng = random.Random(seed)

    def costs(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> list[float]:
        """Each replica's cost for ``request`` (``sched.rs:442-452``)."""
        bs = self.settings.block_size
        weight = self.settings.overlap_score_weight
        isl = request.prompt_tokens
        request_blocks = -(-isl // bs)
        out = []
        for replica in replicas:
            overlap = min(replica.cached_prefix(request.key), isl) // bs
            prefill = replica.pending_prefill_tokens + isl - overlap * bs
            decode = -(-replica.active_kv_tokens // bs) + max(request_blocks - overlap, 0)
            out.append(weight * prefill / bs + decode)
        return out

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        """The replica of least cost (or a softmax draw at a positive temperature)."""
        if not replicas:
            raise ValueError("kv_events: no replicas to route to")
        costs = self.costs(request, replicas)
        return softmax_pick(costs, self.settings.router_temperature, self.rng)
