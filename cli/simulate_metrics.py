"""Prometheus text exposition of each replay's cache counters (``--enable-metrics FILE``).

The names mirror what SGLang exports under ``--enable-metrics`` (hit rate,
prompt and cached tokens, evicted tokens, eviction time), prefixed
``radix_evict_`` and labelled by policy (and workload), so a dashboard built
for a serving fleet can read a simulation too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from radix_evict.sim.replay import ReplayResult

Getter = Callable[[ReplayResult], float]


def _stat(name: str, fallback: Getter) -> Getter:
    """A cache counter from ``result.stats``, or the replay's own figure if the cache lacks it."""
    def get(r: ReplayResult) -> float:
        value = r.stats.get(name)
        return float(value) if isinstance(value, (int, float)) else float(fallback(r))
    return get


# (metric name, type, help, value)
METRICS: tuple[tuple[str, str, str, Getter], ...] = (
    ("radix_evict_cache_hit_rate", "gauge",
     "Cached share of the prompt tokens looked up in the cache (hit / (hit + uncached)).",
     _stat("hit_rate", lambda r: r.hit_rate)),
    ("radix_evict_prompt_tokens_total", "counter", "Prompt tokens looked up in the cache.",
     _stat("queried_tokens", lambda r: r.prompt_tokens)),
    ("radix_evict_cached_tokens_total", "counter", "Prompt tokens served from the cache.",
     _stat("hit_tokens", lambda r: r.hit_tokens)),
    ("radix_evict_evicted_tokens_total", "counter", "Tokens evicted from the cache.",
     _stat("evicted_tokens", lambda r: r.evicted_tokens)),
    ("radix_evict_eviction_duration_seconds_total", "counter",
     "Seconds spent in cache eviction.", _stat("eviction_seconds", lambda r: r.eviction_s)),
    ("radix_evict_evictions_total", "counter", "Eviction calls.",
     _stat("evict_calls", lambda r: r.evict_calls)),
    ("radix_evict_requests_total", "counter", "Requests replayed.",
     lambda r: r.requests),
    ("radix_evict_failed_admissions_total", "counter",
     "Requests that found no room in the pool even after eviction.", lambda r: r.failed),
)


def _escape(value: str) -> str:
    """Label values escape backslash, double quote and newline (exposition format)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(r: ReplayResult, with_workload: bool) -> str:
    pairs: list[tuple[str, Any]] = [("policy", r.label)]
    if with_workload:
        pairs.append(("workload", r.workload))
    return ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def prometheus_text(results: Sequence[ReplayResult]) -> str:
    """The counters of every result, one HELP/TYPE block per metric."""
    with_workload = len({r.workload for r in results}) > 1
    lines: list[str] = []
    for name, kind, help_text, get in METRICS:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for r in results:
            lines.append(f"{name}{{{_labels(r, with_workload)}}} {_number(get(r))}")
    return "\n".join(lines) + "\n"


def write_metrics(path: Path, results: Sequence[ReplayResult]) -> None:
    """Write the exposition text to ``path`` (an OSError is an environment error, exit 2)."""
    path.write_text(prometheus_text(results), encoding="utf-8")
