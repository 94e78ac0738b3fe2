"""The timed replay: a continuous-batching server in virtual time on the same cache.

``replay(workload, policy, timing=TimingSpec(...))`` (:mod:`radix_evict.sim.replay`)
serves the workload through :class:`~radix_evict.sim.timed.server.Server`
and adds :class:`~radix_evict.sim.timed.figures.TimedFigures` (TTFT, queueing,
TPOT, end-to-end latency, SLO attainment, goodput) to the result. Modules:
``arrivals`` (when requests come), ``cost`` (how long a step takes: the cost
model, its presets and files), ``calibrate`` (fitting a cost model to
measurements), ``server`` (the scheduler's loop, over one module per job:
``scheduler``, ``job``, ``state``, ``admission``, ``prefill``, ``decode``,
``finish``, ``host_copies``), ``figures`` (what is reported), ``spec`` (the
options, in one value), ``hybrid_seam`` (the server on a hybrid model's cache).
"""

__all__ = [
    "admission", "arrivals", "calibrate", "cost", "decode", "figures", "finish", "host_copies",
    "hybrid_seam", "job", "prefill", "scheduler", "server", "spec", "state",
]
