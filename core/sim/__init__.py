"""The simulator: seed-deterministic workloads and traces, replays through the cache,
parallel runs over the cores and the rule that picks a winner."""
