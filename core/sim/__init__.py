"""The simulator: seed-deterministic workloads and traces, replays through the cache,
parallel runs over the cores and the rule that picks a winner.

``__all__`` lists its modules and subpackages: each one's public names are its own.
"""

__all__ = [
    "bound",
    "ceiling",
    "configs",
    "failures",
    "hybrid_replay",
    "hybrid_timed",
    "models",
    "oracle",
    "parallel",
    "replay",
    "results",
    "runs",
    "sweep",
    "tally",
    "traces",
    "winner",
    "workloads",
]
