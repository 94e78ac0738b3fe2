"""Prometheus text exposition of each replay's cache counters (``simulate --enable-metrics``).

The families are the live cache collector's
(:data:`radix_evict.cache.metrics.CACHE_METRICS`), labelled by policy (and
workload), plus two a replay alone knows (requests, failed admissions), so a
dashboard built for a serving fleet can read a simulation too. The file is
prometheus_client's own exposition of a private registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from radix_evict.cache.metrics import CACHE_METRICS, Kind, metric_family
from radix_evict.outputs import Input, OutputFile, starts_with
from radix_evict.sim.replay import ReplayResult

Getter = Callable[[ReplayResult], float]
# Every file write_metrics writes starts so (its families are radix_evict_...): a rerun may
# replace one; any other file needs --force.
METRICS_OURS = starts_with(b"# HELP radix_evict_")

# The replay's own figure for a counter, used when a cache's stats lack that key.
_FALLBACK: dict[str, Getter] = {
    "hit_rate": lambda r: r.hit_rate,
    "queried_tokens": lambda r: r.prompt_tokens,
    "hit_tokens": lambda r: r.hit_tokens,
    "evicted_tokens": lambda r: r.evicted_tokens,
    "eviction_seconds": lambda r: r.eviction_s,
    "evict_calls": lambda r: r.evict_calls,
}


def _stat(key: str) -> Getter:
    def get(r: ReplayResult) -> float:
        value = r.stats.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return float(_FALLBACK[key](r))
    return get


# (name without _total, kind, help, value)
REPLAY_METRICS: tuple[tuple[str, Kind, str, Getter], ...] = (
    *((m.name, m.kind, m.help, _stat(m.stat)) for m in CACHE_METRICS),
    ("radix_evict_requests", "counter", "Requests replayed.", lambda r: r.requests),
    ("radix_evict_failed_admissions", "counter",
     "Requests that found no room in the pool even after eviction.", lambda r: r.failed),
)


class ReplayCollector(Collector):
    """The finished replays' counters, one sample per replay."""

    def __init__(self, results: Sequence[ReplayResult]) -> None:
        self.results = list(results)
        self.labels = ["policy"]
        if len({r.workload for r in self.results}) > 1:
            self.labels.append("workload")

    def _label_values(self, r: ReplayResult) -> list[str]:
        return [r.label, r.workload][: len(self.labels)]

    def collect(self) -> Iterator[Metric]:
        for name, kind, help_text, get in REPLAY_METRICS:
            family = metric_family(name, kind, help_text, self.labels)
            for r in self.results:
                family.add_metric(self._label_values(r), float(get(r)))
            yield family


def prometheus_text(results: Sequence[ReplayResult]) -> str:
    """The counters of every result in the Prometheus text format."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ReplayCollector(results))
    return generate_latest(reg).decode("utf-8")


def write_metrics(out: OutputFile, results: Sequence[ReplayResult],
                  inputs: Iterable[Input] = ()) -> None:
    """Write the exposition text to ``out`` (radix_evict.outputs' rule; refused: exit 2)."""
    out.write_text(prometheus_text(results), inputs)
