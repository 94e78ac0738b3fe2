"""Built-in workloads shrunk for ``simulate --model tiny``: an engine replay of seconds on a CPU.

The engine (:mod:`radix_evict.engine`) replays whatever requests it is given;
choosing and sizing the workload is the simulator's job, done here. The
``chat`` workload's defaults hold thousands of requests of thousands of
tokens each; :data:`TINY_PARAMS` cuts them to a few dozen short ones.
"""

from __future__ import annotations

from typing import Any

from radix_evict.sim.workloads.base import Workload

TINY_PARAMS: dict[str, dict[str, Any]] = {
    "chat": {
        "convs": 10, "max_turns": 3, "num_sys": 3, "sys_min": 64, "sys_max": 256,
        "user_median": 32.0, "out_median": 4.0, "tool_loop_prob": 0.1,
        "tool_result_median": 40.0,
    },
}


def tiny_workload(name: str = "chat", seed: int = 0, **params: Any) -> Workload:
    """Built-in workload ``name`` shrunk by :data:`TINY_PARAMS` where known; ``params`` win."""
    from radix_evict.sim.workloads import get_workload

    return get_workload(name, seed=seed, **{**TINY_PARAMS.get(name, {}), **params})
