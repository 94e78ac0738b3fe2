"""``retain``: lru that keeps what a client will come back for, within a budget.

Two hints ask a cache to keep a prefix: a retention time the client asked for
(``RequestContext.retention_s``) and, for an agent waiting on a tool, the
expected seconds until its next request (``next_request_s``). ``retain``
scores a node as lru does, ``last_access_time``, plus an *extension* computed
from the requested time converted to the tree's logical clock (ticks per
second, a running rate measured from the requests' arrivals, since the clock's
pace follows the load). ``order`` says which protected nodes go first when
they do not all fit:

* ``soonest`` (the default): the extension is the horizon (``max_extension``
  mean ages of lru's victims) less the time until the client returns, so the
  agent coming back soonest ranks highest and the latest-returning sessions
  are evicted first, whole, instead of every waiting agent losing part of its
  prefix (Belady's order among the hinted; a return beyond the horizon gets
  nothing). With agents' tools running longer than the pool can hold them all,
  this is what lowers p99 TTFT (docs/hints.md: -11.7% with ``latest``).
* ``latest``: the extension is the time until the return itself (at most the
  horizon), so the node looks recent until about when its client said it would
  return; it then ranks the latest return highest (the first version's order).

No re-scoring is needed when the time is up, so the driver's heap stays exact.

So that hints cannot pin the cache shut:

* an extension is at most ``max_extension`` mean ages of lru's victims;
* protected nodes hold at most ``budget`` of the cache's tokens (the
  high-water mark of what the policy has seen cached); a request over the
  budget gets no protection;
* each extension is scaled by ``trust``: the share of protections that a
  lookup used before they ran out, against a prior, mapped so that hints right
  half the time or less earn nothing (the policy is then lru exactly).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

if TYPE_CHECKING:
    from radix_evict import TreeNode

AGE_WEIGHT = 1 / 64
MIN_SPAN_S = 1.0  # ticks per second are measured over spans of at least this many seconds
RATE_WEIGHT = 0.2  # the running rate moves this far per span (the clock's pace varies with load)


class RetainConfig(PolicyConfig):
    """Keys of the ``retain`` policy (strict: unknown keys and coercion are errors)."""

    budget: float = Field(
        default=0.6, ge=0.0, le=1.0,
        description="Most of the cache (share of its tokens) that protections may hold.")
    max_extension: float = Field(
        default=8.0, ge=0.0, le=64.0,
        description="The horizon: longest extension, in mean ages of lru's victims.")
    order: Literal["soonest", "latest"] = Field(
        default="soonest",
        description="Which protections rank highest: the soonest return (the extension is "
                    "the horizon less the wait) or the latest (the extension is the wait).")
    margin: float = Field(
        default=1.5, ge=1.0, le=10.0,
        description="An agent's expected return time is stretched by this much (it is a "
                    "mean; tools run late).")
    adaptive: bool = Field(
        default=True,
        description="Scale extensions by the measured share of protections used in time "
                    "(false: always trust hints fully).")


def _wanted_s(ctx: Any, margin: float) -> float:
    """Seconds the request's client asked its prefix to be kept (0: none)."""
    if ctx is None:
        return 0.0
    r = ctx.retention_s
    n = ctx.next_request_s
    asked = r if r is not None and r > 0 else 0.0
    return max(asked, n * margin if n is not None and n > 0 else 0.0)


class RetainPolicy(EvictionPolicy[RetainConfig]):
    """``last_access_time`` plus a bounded, trusted extension (module docstring)."""

    name = "retain"
    uses_context = True

    def __init__(self, config: RetainConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self._budget, self._cap, self._margin = c.budget, c.max_extension, c.margin
        self._adaptive = c.adaptive
        self._soonest = c.order == "soonest"
        self._ext: dict[TreeNode, float] = {}
        # (second its hint is judged at, seq, node): a protection not used by then was wrong
        self._protected: list[tuple[float, int, TreeNode]] = []
        self._until: dict[TreeNode, float] = {}
        self._seqs: dict[TreeNode, int] = {}  # node -> its live entry in _protected
        self._seq = 0
        self.protected_tokens = 0
        self._tokens = 0
        self._high = 0
        self._now = 0.0
        self._mark: tuple[float, float] | None = None  # (tick, arrival) where a span starts
        self.rate = 0.0  # ticks per second, recent
        self._now_s = 0.0  # the latest arrival seen: hints are judged in seconds
        self.mean_age = 0.0
        self.right, self.wrong = 4.0, 1.0  # prior: protections used in time, or not

    @property
    def trust(self) -> float:
        if not self._adaptive:
            return 1.0
        return min(1.0, max(0.0, 2.0 * self.right / (self.right + self.wrong) - 1.0))

    def score(self, node: TreeNode) -> float:
        return node.last_access_time + self._ext.get(node, 0.0)

    # ------------------------------------------------------------------ bookkeeping
    def _clock(self, node: TreeNode) -> None:
        t = node.last_access_time
        if t > self._now:
            self._now = t
        arrival = getattr(node.context, "arrival", None)
        if arrival is None:
            return
        if arrival > self._now_s:
            self._now_s = arrival
        if self._mark is None:
            self._mark = (t, arrival)
        elif arrival - self._mark[1] >= MIN_SPAN_S:
            rate = (t - self._mark[0]) / (arrival - self._mark[1])
            self.rate = rate if not self.rate else self.rate + RATE_WEIGHT * (rate - self.rate)
            self._mark = (t, arrival)

    def _expire(self) -> None:
        """Release protections whose time is up; one never used was a wrong hint."""
        heap = self._protected
        while heap and heap[0][0] <= self._now_s:
            _, seq, node = heapq.heappop(heap)
            if self._seqs.get(node) != seq:
                continue  # renewed or released since
            del self._seqs[node]
            self._release(node)
            # (its score keeps the extension until its next event: the heap holds it)
            self.wrong += 1

    def _release(self, node: TreeNode) -> None:
        if self._until.pop(node, None) is not None:
            self.protected_tokens -= node.num_tokens
        self._seqs.pop(node, None)

    def _protect(self, node: TreeNode) -> None:
        """Protect ``node`` as its context asks, within the cap and the budget.

        The hint is judged (in seconds of the requests' clock) at twice the
        time it asked for, even when trust scales the extension to nothing, so
        trust can come back; not at the capped extension: a return after the
        cap is the cap's doing, not a wrong hint (judged so, true tool-return
        hints earned trust 0.12 under a tight cap, bench/bench_hints.py).
        """
        self._clock(node)
        self._expire()
        want = _wanted_s(node.context, self._margin)
        asked = want * self.rate if want and self.rate > 0 else 0.0  # in ticks
        horizon = self._cap * self.mean_age
        wait = min(asked, horizon)
        raw = horizon - wait if self._soonest else wait
        renewing = node in self._until
        # ``soonest`` protects every hinted node (it counts against the budget and its hint
        # is judged) even where it gives no extension (a return beyond the horizon, or no
        # horizon yet: nothing evicted); ``latest`` those it extends, as it always did
        gate = asked if self._soonest else raw
        if gate > 0 and (renewing or self.protected_tokens + node.num_tokens
                         <= self._budget * self._high):
            if not renewing:
                self.protected_tokens += node.num_tokens
            self._until[node] = node.last_access_time + wait
            self._seq += 1
            self._seqs[node] = self._seq
            at = self._now_s + 2 * want
            heapq.heappush(self._protected, (at, self._seq, node))
            ext = raw * self.trust
            if ext > 0:
                self._ext[node] = ext
                return
        else:
            self._release(node)
        self._ext.pop(node, None)

    # ------------------------------------------------------------------ callbacks
    def on_insert(self, node: TreeNode) -> None:
        self._tokens += node.num_tokens
        if self._tokens > self._high:
            self._high = self._tokens
        self._protect(node)

    def on_hit(self, node: TreeNode) -> None:
        if node in self._seqs:  # protected, and not judged yet: the client came back
            self.right += 1
        self._protect(node)

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        self._protect(head)

    def on_evict(self, node: TreeNode) -> None:
        self._tokens -= node.num_tokens
        self._release(node)
        protected = self._ext.pop(node, None) is not None
        if not protected:
            age = max(0.0, self._now - node.last_access_time)
            self.mean_age += AGE_WEIGHT * (age - self.mean_age) if self.mean_age else age
