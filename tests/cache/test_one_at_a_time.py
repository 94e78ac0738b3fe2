"""A cache runs one operation at a time: a policy calling back in, or a second thread, is refused.

A policy whose ``score()`` or callback calls a cache operation gets a
PolicyError naming it, and the outer operation is undone; a second thread
gets CacheBusyError at once, and the operations that did run leave a
consistent cache.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import torch
from helpers.rigs import Rig, cache_state

from radix_evict import CacheBusyError, EvictionPolicy, KVPool, PolicyError, RadixCache, TreeNode
from radix_evict.testing.invariants import check_cache


class CallsBack(EvictionPolicy):
    """LRU, except that once armed, score() (or on_hit) calls ``action(cache)``."""

    name = "calls-back"
    cache: ClassVar[RadixCache | None] = None
    action: ClassVar[Any] = None
    in_hit: ClassVar[bool] = False

    def score(self, node: TreeNode) -> float:
        if type(self).action is not None and not type(self).in_hit:
            type(self).action(type(self).cache)
        return float(node.last_access_time)

    def on_hit(self, node: TreeNode) -> None:
        if type(self).action is not None and type(self).in_hit:
            type(self).action(type(self).cache)


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = Rig(size=256, policy=CallsBack())
    CallsBack.cache = r.cache
    for prompt in ([1, 2, 3, 4, 5, 6], [1, 2, 3, 9, 9], [7, 7, 7]):
        r.insert(prompt)
    yield r
    CallsBack.action = None
    CallsBack.in_hit = False
    CallsBack.cache = None


CALLS_BACK = {
    "match_prefix": lambda c: c.match_prefix([1, 2, 3]),
    "insert": lambda c: c.insert([5, 5], torch.tensor([200, 201])),
    "evict": lambda c: c.evict(1),
    "inc_lock_ref": lambda c: c.inc_lock_ref(c.root),
    "reset": lambda c: c.reset(),
}


def fresh(rig: Rig, n: int) -> torch.Tensor:
    slots = rig.pool.alloc(n)
    assert slots is not None
    return slots


@pytest.mark.parametrize("inner", sorted(CALLS_BACK))
@pytest.mark.parametrize("outer", ["insert-split", "insert-new", "match", "unlock", "evict"])
def test_a_policy_calling_back_into_the_cache_is_refused_and_nothing_changes(
    rig: Rig, outer: str, inner: str
) -> None:
    cache = rig.cache
    locked = cache.match_prefix([7, 7, 7]).last_node
    cache.inc_lock_ref(locked)
    slots = fresh(rig, 8)
    before = cache_state(cache)
    CallsBack.action = CALLS_BACK[inner]
    with pytest.raises(PolicyError, match=r"policy 'calls-back'.*called RadixCache\.") as err:
        if outer == "insert-split":
            cache.insert([1, 2, 3, 4, 8, 8], slots[:6])
        elif outer == "insert-new":
            cache.insert([4, 4, 4], slots[:3])
        elif outer == "match":
            cache.match_prefix([1, 2, 3, 4, 5])  # splits nothing; its leaf is re-scored
            cache.match_prefix([1, 2])  # splits: the tail is scored
        elif outer == "unlock":
            cache.dec_lock_ref(locked)
        else:
            CallsBack.action = None
            cache.dec_lock_ref(locked)
            before = cache_state(cache)
            CallsBack.action = CALLS_BACK[inner]
            cache.evict(6)  # a parent left childless is re-scored
    assert inner in str(err.value) and err.value.policy == "calls-back"
    CallsBack.action = None
    assert cache_state(cache) == before
    check_cache(cache, held_by_callers=[slots])


def test_a_callback_calling_back_is_refused_too(rig: Rig) -> None:
    cache = rig.cache
    before = cache_state(cache)
    CallsBack.in_hit = True
    CallsBack.action = CALLS_BACK["evict"]
    with pytest.raises(PolicyError, match=r"called RadixCache\.evict while the cache was in "
                                          r"match_prefix"):
        cache.match_prefix([1, 2, 3, 4])
    CallsBack.action = None
    assert cache_state(cache) == before
    cache.evict(100)  # the cache works on: no slot is left held by a caller
    check_cache(cache)


def test_a_policy_may_read_the_cache_while_scoring(rig: Rig) -> None:
    """Sizes and the node list change nothing: reading them is not calling back in."""
    CallsBack.action = lambda c: (c.evictable_size(), c.total_size(), len(c.iter_nodes()))
    rig.insert([3, 3, 3, 3])
    assert rig.cache.evict(100) > 0
    check_cache(rig.cache)


# ----------------------------------------------------------------------------- threads

THREADS = 4
REQUESTS = 300


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every microsecond, so the threads' operations overlap often."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def test_threads_sharing_a_cache_get_a_clear_error_and_no_corruption(
    fast_switching: None,
) -> None:
    pool = KVPool(size=THREADS * REQUESTS * 16 + 64, page_size=1, device="cpu")
    cache = RadixCache(pool, policy="lru")
    # Slots are allocated here, not in the threads: the pool is the cache's to drive.
    batches = [[pool.alloc(16) for _ in range(REQUESTS)] for _ in range(THREADS)]
    held: list[list[torch.Tensor]] = [[] for _ in range(THREADS)]  # never given to the cache
    refused = [0] * THREADS
    other: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        rng = random.Random(i)
        start.wait()
        for slots in batches[i]:
            assert slots is not None
            tokens = [rng.randrange(3) for _ in range(4)] + [rng.randrange(50) for _ in range(12)]
            try:
                cache.match_prefix(tokens[:8])
            except CacheBusyError:
                refused[i] += 1
            try:
                cache.insert(tokens, slots)
            except CacheBusyError:
                refused[i] += 1
                held[i].append(slots)
            try:
                cache.evict(rng.randrange(1, 40))
            except CacheBusyError:
                refused[i] += 1

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as e:  # anything but CacheBusyError is a failure
            other.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not other, other
    assert sum(refused) > 0, "the threads never overlapped: the test proves nothing"
    check_cache(cache, held_by_callers=[s for h in held for s in h])
    accepted = THREADS * REQUESTS - sum(len(h) for h in held)
    assert cache.stats.insert_calls == accepted


def test_the_thread_error_says_what_to_do() -> None:
    cache = Rig().cache
    inside = threading.Event()
    release = threading.Event()

    class Slow(EvictionPolicy):
        name = "slow"

        def score(self, node: TreeNode) -> float:
            inside.set()
            release.wait(10)
            return 0.0

    cache = RadixCache(KVPool(size=64, device="cpu"), policy=Slow())
    slots = cache.pool.alloc(4)
    assert slots is not None
    t = threading.Thread(target=cache.insert, args=([1, 2, 3, 4], slots))
    t.start()
    assert inside.wait(10)
    before_calls = cache.stats.match_calls
    with pytest.raises(CacheBusyError, match=r"RadixCache\.match_prefix called from thread "
                                             r"\d+ while thread \d+ is in RadixCache\.insert: "
                                             r"a RadixCache is single-threaded") as err:
        cache.match_prefix([1, 2])
    assert "use one cache per thread" in str(err.value)
    release.set()
    t.join(10)
    assert cache.stats.match_calls == before_calls and cache.total_size() == 4
    check_cache(cache)
