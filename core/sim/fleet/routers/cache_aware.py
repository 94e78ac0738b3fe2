"""sglang-router 0.3.2's policy: affinity by an approximate prefix tree unless load is unbalanced.

Every rule is taken from the source the sglang-router 0.3.2 wheel was built
from (its sdist on PyPI, ``sglang_router-0.3.2.tar.gz``, cut at sglang's
"[smg] release 0.3.2 (#17168)"; the installed router's debug log
places its "Load balancing triggered" line at ``cache_aware.rs:300``, that
line of the sdist). ``ca.rs`` below is
``src/policies/cache_aware.rs``, ``router.rs`` is ``src/routers/http/router.rs``,
``worker.rs`` is ``src/core/worker.rs``, ``args.py`` is
``sglang_router/router_args.py``.

For each request (``ca.rs:351-473``, ``select_worker``):

1. Load is the router's own count of requests it sent to a worker and has not
   had the answer of (``router.rs:294-296``: a ``WorkerLoadGuard`` is made
   after the choice; ``worker.rs:1114-1139``: +1 when made, -1 when dropped,
   which ``router.rs:592`` does once the worker's response body is read). The
   request being routed is not in it. The counts live here, not in the
   replicas' views, so the router runs alone too (the exactness harness).
2. Unbalanced when ``max - min > balance_abs_threshold`` and
   ``max > min * balance_rel_threshold`` in ``f32`` (``ca.rs:363-372``; max and
   min over all workers). Then the least-loaded worker gets the request (the
   first in worker order on a tie: Rust's ``min_by_key``, ``ca.rs:306-310``) and
   its text still goes into the tree under that worker (``ca.rs:312-321``).
3. Otherwise the tree's prefix match gives the deepest node the text reaches
   and that node's tenant; the match rate is matched / total characters
   (``f32``; 0 for an empty text, ``ca.rs:395-400``). Above ``cache_threshold``
   (strictly) the request goes to that tenant, else to the least-loaded worker
   (``ca.rs:403-416``; the file's header comment says "smallest tree", the code
   uses load). The text is then inserted under the chosen worker (``ca.rs:418-420``).
4. A matched tenant that is no worker (Rust's ``"empty"``: the node kept no
   tenant) falls back to the first worker without inserting (``ca.rs:441-461``).
5. Every ``eviction_interval_secs`` a background thread trims each worker's
   share of the tree to ``max_tree_size`` characters (``ca.rs:100-120``;
   ``src/policies/utils.rs:21-51``: sleep first, then evict); here the interval
   runs on the replay's virtual clock from time 0, checked when a request arrives.
6. Every worker owns the empty text from the start (``ca.rs:142-164``).

Defaults are the Python launcher's (``args.py:33-37``: 0.3, 64, 1.5, 60 s,
2**26), which ``python -m sglang_router.launch_router`` hands to Rust; the Rust
struct's own defaults (``src/policies/mod.rs:101-111``: 0.5, 32, 1.1, 30, 10000)
are not what the command runs. Bounds are Rust's (``src/config/validation.rs:154-190``).

Characters and tokens. The real router's tree holds characters: the request's
``text``, or for ``input_ids`` the ids in decimal joined by spaces
(``src/protocols/generate.rs:214-233``). A match there counts characters, the
thresholds are ratios of characters, ``max_tree_size`` counts characters, and
a prefix can end inside a word or a number ("123 45" and "123 46" share 5).
Here a key is any ``Sequence[Hashable]``: a ``str`` is matched by character,
exactly as the router does (the harness), and a replay's token ids are matched
by token, so the rate is a ratio of tokens and the size limit counts tokens.
That is the router's rule with a token as the unit: for text the two differ by
how many characters each token spans. ``match_on="ids_text"`` renders token ids
as the router renders ``input_ids`` and matches that text, for a replay that
wants the character-level figures of a router fed token ids.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from radix_evict.sim.fleet.router import ReplicaState, RoutedRequest, Router, RouterConfig
from radix_evict.sim.fleet.routers.approx_tree import ApproxTree, Key, as_key

__all__ = ["CacheAwareConfig", "CacheAwareRouter"]

_F32 = np.float32


class CacheAwareConfig(RouterConfig):
    """The ``cache_aware`` router's settings; defaults are sglang-router 0.3.2's CLI defaults."""

    cache_threshold: float = Field(
        0.3, ge=0.0, le=1.0,
        description="route by prefix match when matched/total is above this")
    balance_abs_threshold: int = Field(
        64, ge=0, description="unbalanced needs max_load - min_load above this ...")
    balance_rel_threshold: float = Field(
        1.5, ge=1.0, description="... and max_load above min_load times this")
    eviction_interval_secs: int = Field(
        60, ge=1, description="virtual seconds between tree evictions")
    max_tree_size: int = Field(
        2**26, ge=1, description="elements (characters or tokens) each worker may own in the tree")
    match_on: Literal["tokens", "ids_text"] = Field(
        "tokens", description="match token ids as tokens, or as the router's text of input_ids")


def ids_text(key: Sequence[Hashable]) -> str:
    """Token ids as sglang-router renders ``input_ids`` for routing: decimal, space-joined."""
    ids = key.tolist() if isinstance(key, np.ndarray) else key
    return " ".join(str(t) for t in ids)


class CacheAwareRouter(Router):
    """sglang-router's ``cache_aware``: one approximate tree, per-worker loads, balance check."""

    name = "cache_aware"
    config_model = CacheAwareConfig

    def __init__(self, config: CacheAwareConfig, *, replicas: int, seed: int = 0) -> None:
        super().__init__(config, replicas=replicas, seed=seed)
        if replicas < 1:
            raise ValueError(f"cache_aware: replicas must be at least 1, got {replicas}")
        self.settings = config
        self.tree = ApproxTree()
        for worker in range(replicas):  # ca.rs:142-164: every worker starts owning ""
            self.tree.insert("", worker)
        self.load = [0] * replicas
        self._threshold = _F32(config.cache_threshold)
        self._rel = _F32(config.balance_rel_threshold)
        self._next_eviction = float(config.eviction_interval_secs)

    def route(self, request: RoutedRequest, replicas: Sequence[ReplicaState]) -> int:
        """The worker for ``request``; records it in the tree and in that worker's load."""
        self._evict_due(request.arrival)
        key = request.key
        if self.settings.match_on == "ids_text" and not isinstance(key, str):
            key = ids_text(key)
        choice = self.choose(as_key(key))
        self.load[choice] += 1
        return choice

    def on_finish(self, request: RoutedRequest, replica: int) -> None:
        """The answer came back: its worker's load drops by one, not below 0 (worker.rs:763-776)."""
        if self.load[replica] > 0:
            self.load[replica] -= 1

    def unbalanced(self) -> bool:
        """``ca.rs:371-372``: both the absolute and the relative threshold are exceeded."""
        low, high = min(self.load), max(self.load)
        return (high - low > self.settings.balance_abs_threshold
                and bool(_F32(high) > _F32(low) * self._rel))

    def least_loaded(self) -> int:
        """The first worker with the smallest load (Rust ``min_by_key``, ``ca.rs:412-415``)."""
        return self.load.index(min(self.load))

    def choose(self, key: Key) -> int:
        """The worker for ``key`` under the current loads and tree; inserts the key under it."""
        if self.unbalanced():
            choice = self.least_loaded()
            self.tree.insert(key, choice)
            return choice
        tenant, matched = self.tree.prefix_match(key)
        total = len(key)
        rate = _F32(0.0) if total == 0 else _F32(matched) / _F32(total)
        if rate > self._threshold:
            if tenant is None:  # ca.rs:441-461: no such worker -> the first, no insert
                return 0
            choice = tenant
        else:
            choice = self.least_loaded()
        self.tree.insert(key, choice)
        return choice

    def _evict_due(self, now: float) -> None:
        """Run the eviction ticks due at or before ``now`` (one trim covers them all)."""
        if now < self._next_eviction:
            return
        self.tree.evict_by_size(self.settings.max_tree_size)
        interval = self.settings.eviction_interval_secs
        while self._next_eviction <= now:
            self._next_eviction += interval
