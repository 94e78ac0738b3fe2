"""CacheCollector: a cache's live counters through prometheus_client, read at scrape time."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from radix_evict import KVPool, RadixCache
from radix_evict.cache.metrics import CACHE_METRICS, CacheCollector


def _scrape(reg: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(reg).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def _request(cache: RadixCache, pool: KVPool, tokens: list[int]) -> None:
    m = cache.match_prefix(tokens)
    short = len(tokens) - m.prefix_len - pool.available_size()
    if short > 0:
        cache.evict(short)
    new = pool.alloc(len(tokens) - m.prefix_len)
    assert new is not None
    cache.insert(tokens, torch.cat([m.indices, new]), prev_prefix_len=m.prefix_len)


def test_counters_are_read_at_scrape_time() -> None:
    pool = KVPool(size=16, device="cpu", layers=0)
    cache = RadixCache(pool)
    reg = CollectorRegistry()
    reg.register(CacheCollector(cache, labels={"engine": "w0"}))
    lab = (("engine", "w0"),)
    before = _scrape(reg)
    assert before[("radix_evict_prompt_tokens_total", lab)] == 0
    _request(cache, pool, list(range(10)))
    _request(cache, pool, list(range(8)))       # 8 cached
    _request(cache, pool, list(range(100, 110)))  # evicts
    after = _scrape(reg)
    st = cache.stats
    assert after[("radix_evict_prompt_tokens_total", lab)] == st.queried_tokens == 28
    assert after[("radix_evict_cached_tokens_total", lab)] == st.hit_tokens == 8
    assert after[("radix_evict_evicted_tokens_total", lab)] == st.evicted_tokens > 0
    assert after[("radix_evict_evictions_total", lab)] == st.evict_calls == 1
    assert after[("radix_evict_cache_hit_rate", lab)] == pytest.approx(8 / 28)
    assert after[("radix_evict_eviction_duration_seconds_total", lab)] == pytest.approx(
        st.eviction_seconds)


def test_every_family_is_typed_and_documented() -> None:
    pool = KVPool(size=8, device="cpu", layers=0)
    reg = CollectorRegistry()
    reg.register(CacheCollector(RadixCache(pool)))
    fams = {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}
    assert set(fams) == {m.name for m in CACHE_METRICS}
    for m in CACHE_METRICS:
        assert fams[m.name].type == m.kind and fams[m.name].documentation == m.help


def test_several_caches_in_one_collector() -> None:
    caches = [RadixCache(KVPool(size=8, device="cpu", layers=0)) for _ in range(2)]
    col = CacheCollector(caches[0], labels={"model": "a"})
    col.add(caches[1], labels={"model": "b"})
    caches[1].match_prefix([1, 2, 3])
    reg = CollectorRegistry()
    reg.register(col)
    got = _scrape(reg)
    assert got[("radix_evict_prompt_tokens_total", (("model", "a"),))] == 0
    assert got[("radix_evict_prompt_tokens_total", (("model", "b"),))] == 3


@pytest.mark.parametrize(("labels", "cache", "error"), [
    ({"other": "x"}, "cache", ValueError),
    ({"model": "c"}, object(), TypeError),
])
def test_add_refuses_other_label_names_and_non_caches(
    labels: dict[str, str], cache: Any, error: type[Exception]
) -> None:
    col = CacheCollector(RadixCache(KVPool(size=8, device="cpu", layers=0)),
                         labels={"model": "a"})
    target = RadixCache(KVPool(size=8, device="cpu", layers=0)) if cache == "cache" else cache
    with pytest.raises(error):
        col.add(target, labels=labels)


def test_registering_reads_no_cache() -> None:
    class Counting:
        reads = 0

        @property
        def stats(self) -> Any:
            Counting.reads += 1
            raise AssertionError("read at registration")

    reg = CollectorRegistry()
    reg.register(CacheCollector(Counting()))
    assert Counting.reads == 0
