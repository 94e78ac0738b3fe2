"""``--enable-metrics FILE``: the replays' counters in the Prometheus text format, written by
:mod:`radix_evict.sim.metrics` (the command looks ``write_metrics`` up here)."""

from radix_evict.sim.metrics import METRICS_OURS, prometheus_text, write_metrics

__all__ = ["METRICS_OURS", "prometheus_text", "write_metrics"]
