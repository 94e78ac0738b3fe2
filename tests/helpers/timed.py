"""Small workloads and cost models for the timed replay's tests."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from radix_evict.sim.timed.cost import CostModel
from radix_evict.sim.workloads import Request, Workload
from radix_evict.sim.workloads.base import Event, WorkloadParams


class ListWorkload(Workload):
    """Requests given one by one (arrival times included), in arrival order."""

    def __init__(self, requests: Sequence[Request], pool: int = 1_000_000) -> None:
        self.name = "list"
        self.seed = 0
        self.params = WorkloadParams()
        self.default_pool_tokens = pool
        self._requests = list(requests)

    @property
    def num_requests(self) -> int:
        return len(self._requests)

    def events(self) -> Iterator[Event]:
        t = 0.0
        for r in self._requests:
            yield Event(r.arrival, "arrive", r)
            t = r.arrival
            yield Event(t, "finish", r)

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        return np.asarray([len(r.prompt) for r in self._requests], dtype=np.int64), "prompts"


def request(i: int, prompt: Sequence[int], output: Sequence[int], arrival: float,
            priority: int = 0) -> Request:
    full = np.asarray(list(prompt) + list(output), dtype=np.int64)
    p = len(prompt)
    return Request(f"q{i}", full[:p], full[p:], priority, arrival, i, 0, "test", full)


def unique_requests(n: int, *, rate: float, seed: int, max_prompt: int = 200,
                    max_output: int = 30) -> list[Request]:
    """``n`` requests sharing no token, Poisson arrivals at ``rate`` per second."""
    rng = np.random.default_rng(seed)
    t = 0.0
    out = []
    next_token = 0
    for i in range(n):
        t += float(rng.exponential(1 / rate))
        p = int(rng.integers(1, max_prompt + 1))
        o = int(rng.integers(1, max_output + 1))
        toks = list(range(next_token, next_token + p + o))
        next_token += p + o
        out.append(request(i, toks[:p], toks[p:], t))
    return out


def fixed_cost(prefill_base: float = 2.0, per_token: float = 0.01, per_mpair: float = 0.0,
               decode_base: float = 1.0, per_request: float = 0.0,
               per_ktoken: float = 0.0, host_gbps: float | None = None) -> CostModel:
    """A cost model with these coefficients (and a [transfer] table when ``host_gbps``)."""
    data: dict[str, object] = {
        "name": "test",
        "prefill": {"base_ms": prefill_base, "per_token_ms": per_token,
                    "per_mpair_ms": per_mpair},
        "decode": {"base_ms": decode_base, "per_request_ms": per_request,
                   "per_ktoken_ms": per_ktoken},
    }
    if host_gbps is not None:
        data["transfer"] = {"kv_bytes_per_token": 131_072, "host_gbps": host_gbps}
    return CostModel.model_validate(data)
