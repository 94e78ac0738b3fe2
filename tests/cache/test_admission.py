"""Admission into the host tier: SGLang's selective rule exact, TinyLFU, and no cost without one.

Run with ``RADIX_EVICT_PURE_PYTHON=1`` until the compiled host tier is rebuilt
(the admission hook lives in ``host_tier.py``, a compiled module).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from radix_evict.cache.admission import (
    AdmissionPolicy,
    SelectiveAdmission,
    TinyLFUAdmission,
    admission_policy,
)
from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.cache.pool import KVPool
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.cache.tree import TreeNode
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

POOL = 20_000


def _host(result: Any) -> tuple[Any, ...]:
    h = result.host
    return (result.hit_rate, h.written_tokens, h.loaded_tokens, h.host_hit_tokens,
            h.device_hit_tokens, h.host_evicted_tokens, h.write_failed_tokens)


@pytest.fixture(scope="module")
def chat() -> Any:
    return get_workload("chat", seed=0, convs=120)


def test_selective_admission_is_write_through_selective_exactly(chat: Any) -> None:
    sglang = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
                    host=HostTierSpec(ratio=2.0, write_policy="write_through_selective"))
    hooked = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
                    host=HostTierSpec(ratio=2.0, write_policy="write_through",
                                      admission="selective"))
    plain = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
                   host=HostTierSpec(ratio=2.0, write_policy="write_through"))
    assert _host(hooked) == _host(sglang)
    assert plain.host.written_tokens > sglang.host.written_tokens  # the rule does something


def test_no_admission_asks_nothing(chat: Any) -> None:
    spec = HostTierSpec(ratio=2.0)
    pool = KVPool(size=1000, page_size=1, device="cpu", layers=0)
    cache = RadixCache(pool, page_size=1, policy="lru", host_tier=spec)
    host = cache.host_tier
    assert host is not None and host.admission is None
    assert "admission" not in host.describe()


def test_tinylfu_writes_from_the_second_offer(chat: Any) -> None:
    t = TinyLFUAdmission(min_count=2, width=64, sample=1000)
    pool = KVPool(size=1000, page_size=1, device="cpu", layers=0)
    cache = RadixCache(pool, page_size=1, policy="lru")
    key = np.arange(100, 120, dtype=np.int64)
    cache.insert(key, pool.alloc(len(key)))
    node = cache.match_prefix(key).last_node
    assert isinstance(node, TreeNode)
    assert t.estimate(node) == 0
    assert not t.admits(node) and t.admits(node)
    assert (t.admitted_nodes, t.rejected_nodes, t.rejected_tokens) == (1, 1, 20)
    t._age()
    assert t.estimate(node) == 1


def test_tinylfu_writes_less_on_chat(chat: Any) -> None:
    plain = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
                   host=HostTierSpec(ratio=2.0))
    lfu = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
                 host=HostTierSpec(ratio=2.0, admission="tinylfu"))
    assert lfu.host.written_tokens < plain.host.written_tokens
    assert lfu.host.device_hit_tokens + lfu.host.host_hit_tokens > 0


def test_write_back_rejected_victims_leave_the_tree(chat: Any) -> None:
    class Never(AdmissionPolicy):
        name = "never"

        def admit(self, node: TreeNode) -> bool:
            return False

    r = replay(chat, "lru", pool_tokens=POOL, timeline_points=0,
               host=HostTierSpec(ratio=2.0, write_policy="write_back", admission=Never()))
    assert r.host.written_tokens == 0 and r.host.host_hit_tokens == 0


@pytest.mark.parametrize(("spec", "config", "named"), [
    ("lfu", None, "admission 'lfu' is not one of selective, tinylfu"),
    ("tinylfu", {"min_count": 0}, "min_count must be an integer >= 1"),
    ("tinylfu", {"minimum": 2}, "bad config"),
    ("selective", {"threshold": 1.5}, "threshold must be an integer >= 1"),
    (SelectiveAdmission(), {"threshold": 2}, "only for an admission policy given by name"),
])
def test_bad_admission_is_named(spec: Any, config: Any, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        admission_policy(spec, config)
    if isinstance(spec, str):
        with pytest.raises(ValueError, match=named):
            HostTierSpec(ratio=2.0, admission=spec, admission_config=config)
