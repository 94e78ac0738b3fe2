"""Prometheus metrics of a RadixCache, read from ``cache.stats`` at scrape time.

An engine that embeds :class:`~radix_evict.RadixCache` serves the cache's
counters on its own ``/metrics`` by registering one collector::

    from prometheus_client import REGISTRY
    from radix_evict.cache.metrics import CacheCollector

    REGISTRY.register(CacheCollector(cache, labels={"engine": "worker-0"}))

Nothing runs on the hot path: the cache only bumps its plain counters, and
the collector reads them when Prometheus scrapes. The names mirror what
SGLang exports under ``--enable-metrics`` (hit rate, prompt and cached
tokens, evicted tokens, eviction time), prefixed ``radix_evict_``;
``simulate --enable-metrics`` writes the same families, one sample per replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

Kind = Literal["gauge", "counter"]


@dataclass(frozen=True)
class CacheMetric:
    """One exported family: its name (counters without ``_total``), kind, help, stats key."""

    name: str
    kind: Kind
    help: str
    stat: str  # key of ``cache.stats.as_dict()``


CACHE_METRICS: tuple[CacheMetric, ...] = (
    CacheMetric("radix_evict_cache_hit_rate", "gauge",
                "Cached share of the prompt tokens looked up in the cache "
                "(hit / (hit + uncached)).",
                "hit_rate"),
    CacheMetric("radix_evict_prompt_tokens", "counter", "Prompt tokens looked up in the cache.",
                "queried_tokens"),
    CacheMetric("radix_evict_cached_tokens", "counter", "Prompt tokens served from the cache.",
                "hit_tokens"),
    CacheMetric("radix_evict_evicted_tokens", "counter", "Tokens evicted from the cache.",
                "evicted_tokens"),
    CacheMetric("radix_evict_eviction_duration_seconds", "counter",
                "Seconds spent in cache eviction.", "eviction_seconds"),
    CacheMetric("radix_evict_evictions", "counter", "Eviction calls.", "evict_calls"),
)


def metric_family(
    name: str, kind: Kind, help_text: str, labels: Sequence[str]
) -> GaugeMetricFamily | CounterMetricFamily:
    """An empty gauge or counter family with these label names."""
    if kind == "gauge":
        return GaugeMetricFamily(name, help_text, labels=list(labels))
    return CounterMetricFamily(name, help_text, labels=list(labels))


def stats_values(stats: Any) -> dict[str, float]:
    """``cache.stats`` as numbers by key (``as_dict()`` when it has one, else its attributes)."""
    as_dict = getattr(stats, "as_dict", None)
    raw: Mapping[str, Any] = as_dict() if callable(as_dict) else vars(stats)
    out = {k: float(v) for k, v in raw.items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if "hit_rate" not in out and hasattr(stats, "hit_rate"):
        out["hit_rate"] = float(stats.hit_rate)
    return out


class CacheCollector(Collector):
    """Live counters of one cache (or several, each with its own label values).

    ``labels`` are constant labels added to every sample, e.g. which engine
    or model the cache serves. ``add`` registers more caches under other label
    values, so one collector can serve every cache of a process.
    """

    def __init__(self, cache: Any | None = None, labels: Mapping[str, str] | None = None) -> None:
        self._label_names: tuple[str, ...] = tuple(labels or {})
        self._caches: list[tuple[Any, tuple[str, ...]]] = []
        if cache is not None:
            self.add(cache, labels or {})

    def add(self, cache: Any, labels: Mapping[str, str] | None = None) -> None:
        """Also export ``cache``; its labels must have the names the first cache's had."""
        labels = dict(labels or {})
        if tuple(labels) != self._label_names:
            raise ValueError(f"labels {sorted(labels)} differ from this collector's label "
                             f"names {list(self._label_names)}")
        # Looked up without reading it: registering must not touch the cache.
        if not (hasattr(type(cache), "stats") or "stats" in getattr(cache, "__dict__", {})):
            raise TypeError(f"{type(cache).__name__} has no 'stats': pass a RadixCache")
        self._caches.append((cache, tuple(str(v) for v in labels.values())))

    def describe(self) -> Iterable[Metric]:
        """The families without samples, so registering does not read any cache."""
        for m in CACHE_METRICS:
            yield metric_family(m.name, m.kind, m.help, self._label_names)

    def collect(self) -> Iterator[Metric]:
        """Every family, one sample per cache, read now from ``cache.stats``."""
        values = [(stats_values(cache.stats), label_values) for cache, label_values in self._caches]
        for m in CACHE_METRICS:
            family = metric_family(m.name, m.kind, m.help, self._label_names)
            for stats, label_values in values:
                if m.stat in stats:
                    family.add_metric(list(label_values), stats[m.stat])
            yield family
