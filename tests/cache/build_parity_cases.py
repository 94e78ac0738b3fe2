"""Misuse of the cache and pool API, run in one build and compared with the other.

A compiled (mypyc) build checks annotated argument types itself and would
raise its own ``TypeError`` before the code's checks run; the public methods
are annotated so that it does not, and this list proves it. ``outcomes()``
returns what each case raised (type and message); ``EXPECTED`` is the type
each must raise. ``python tests/cache/build_parity_cases.py`` prints the outcomes
as JSON (the parity test runs it under ``RADIX_EVICT_PURE_PYTHON=1``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import torch

from radix_evict import EvictionPolicy, KVPool, RadixCache, TreeNode


class Scripted(EvictionPolicy):
    """Returns ``Scripted.value`` once armed (raises it if it is an exception)."""

    name = "scripted"
    value: Any = None
    armed = False

    def score(self, node: TreeNode) -> Any:
        if not Scripted.armed:
            return float(node.last_access_time)
        if isinstance(Scripted.value, Exception):
            raise Scripted.value
        return Scripted.value


def _cache(policy: Any = "lru") -> RadixCache:
    cache = RadixCache(KVPool(size=32, device="cpu"), policy=policy)
    row = cache.pool.alloc(4)
    assert row is not None
    cache.insert([1, 2, 3, 4], row)
    return cache


def _slots(cache: RadixCache, n: int) -> torch.Tensor:
    row = cache.pool.alloc(n)
    assert row is not None
    return row


def _score(value: Any) -> Callable[[], Any]:
    def run() -> Any:
        Scripted.armed = False
        cache = _cache(Scripted())
        Scripted.value, Scripted.armed = value, True
        try:
            return cache.insert([5, 6], _slots(cache, 2))
        finally:
            Scripted.armed = False

    return run


def _pool() -> KVPool:
    pool = KVPool(size=8, device="cpu")
    pool.alloc(4)
    return pool


CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "RadixCache(policy=123)": (lambda: _cache(123), "PolicyConfigError"),
    "RadixCache(policy=None)": (lambda: _cache(None), "PolicyConfigError"),
    "RadixCache(policy_config=[1])": (
        lambda: RadixCache(KVPool(size=8, device="cpu"), policy_config=[1]),
        "PolicyConfigError",
    ),
    "RadixCache(policy_config=5)": (
        lambda: RadixCache(KVPool(size=8, device="cpu"), policy_config=5),
        "PolicyConfigError",
    ),
    "RadixCache(page_size=1.5)": (
        lambda: RadixCache(KVPool(size=8, device="cpu"), page_size=1.5),  # type: ignore[arg-type]
        "TypeError",
    ),
    "RadixCache(pool=object())": (lambda: RadixCache(object()), "TypeError"),  # type: ignore[arg-type]
    "inc_lock_ref('node')": (lambda: _cache().inc_lock_ref("node"), "TypeError"),
    "dec_lock_ref(5)": (lambda: _cache().dec_lock_ref(5), "TypeError"),
    "node_slots('x')": (lambda: _cache().node_slots("x"), "TypeError"),
    "evict(1.5)": (lambda: _cache().evict(1.5), "TypeError"),  # type: ignore[arg-type]
    "evict('3')": (lambda: _cache().evict("3"), "TypeError"),  # type: ignore[arg-type]
    "evict(True)": (lambda: _cache().evict(True), "TypeError"),
    "evict(0)": (lambda: _cache().evict(0), "ValueError"),
    "insert(list slots)": (lambda: _cache().insert([1, 2], [5, 6]), "TypeError"),  # type: ignore[arg-type]
    "insert(float slots)": (
        lambda: _cache().insert([1, 2], torch.tensor([1.0, 2.0])),
        "TypeError",
    ),
    "insert(priority=1.5)": (
        lambda: (c := _cache()).insert([5, 6], _slots(c, 2), priority=1.5),  # type: ignore[arg-type]
        "TypeError",
    ),
    "insert(prev_prefix_len='1')": (
        lambda: (c := _cache()).insert([5, 6], _slots(c, 2), prev_prefix_len="1"),  # type: ignore[arg-type]
        "TypeError",
    ),
    "insert(inserted_len=-1)": (
        lambda: (c := _cache()).insert([5, 6], _slots(c, 2), inserted_len=-1),
        "ValueError",
    ),
    "match_prefix(None)": (lambda: _cache().match_prefix(None), "TypeError"),  # type: ignore[arg-type]
    "match_prefix(5)": (lambda: _cache().match_prefix(5), "TypeError"),  # type: ignore[arg-type]
    "KVPool(size='8')": (lambda: KVPool(size="8", device="cpu"), "TypeError"),  # type: ignore[arg-type]
    "KVPool(size=1.5)": (lambda: KVPool(size=1.5, device="cpu"), "TypeError"),  # type: ignore[arg-type]
    "KVPool(page_size=0)": (lambda: KVPool(size=8, page_size=0, device="cpu"), "ValueError"),
    "KVPool(layers=True)": (lambda: KVPool(size=8, layers=True, device="cpu"), "TypeError"),
    "pool.free([1])": (lambda: _pool().free([1]), "TypeError"),  # type: ignore[arg-type]
    "pool.free(float tensor)": (lambda: _pool().free(torch.tensor([1.0])), "TypeError"),
    "pool.alloc(None)": (lambda: _pool().alloc(None), "TypeError"),  # type: ignore[arg-type]
    "pool.alloc(1.5)": (lambda: _pool().alloc(1.5), "TypeError"),  # type: ignore[arg-type]
    "pool.alloc(-1)": (lambda: _pool().alloc(-1), "ValueError"),
    "score None": (_score(None), "PolicyError"),
    "score str": (_score("low"), "PolicyError"),
    "score tensor": (_score(torch.tensor(1.0)), "PolicyError"),
    "score complex": (_score(1j), "PolicyError"),
    "score NaN": (_score(math.nan), "PolicyError"),
    "score tuple": (_score((1, 2)), "PolicyError"),  # after numbers
    "score raises": (_score(ZeroDivisionError("score blew up")), "PolicyError"),
}


def outcomes() -> dict[str, list[str]]:
    """``[exception type, message]`` per case (``["returned", repr]`` if nothing was raised)."""
    out: dict[str, list[str]] = {}
    for name, (call, _) in CASES.items():
        try:
            result = call()
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
        else:
            out[name] = ["returned", repr(result)]
    return out


if __name__ == "__main__":
    print(json.dumps(outcomes()))
