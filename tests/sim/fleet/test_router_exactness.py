"""cache_aware partitions requests as the real sglang-router 0.3.2 does (bench/router_exactness.py).

Runs the real router from ``build/router-env`` (``make router-env``; ``make test``
builds it first) over stand-in workers on 127.0.0.1, on a smaller grid than the
goal's: 300 requests of each stream at 4 workers with 1 and 8 in flight, and
one cell with a balance threshold low enough that the unbalanced branch routes.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from radix_evict.sim.fleet.routers.cache_aware import CacheAwareConfig

BENCH = Path(__file__).resolve().parents[3] / "bench"
TRACE = Path(__file__).resolve().parents[4] / "shared/traces/mooncake_conversation_trace.jsonl"
REQUESTS = 300
WORKERS = 4


@pytest.fixture(scope="module")
def harness() -> Iterator[ModuleType]:
    """bench/router_exactness.py, with the real router's python checked."""
    sys.path.insert(0, str(BENCH))
    try:
        import router_exactness
    finally:
        sys.path.remove(str(BENCH))
    if router_exactness.router_python() is None:
        pytest.skip("sglang-router 0.3.2 is not in build/router-env; run: make router-env")
    yield router_exactness


@functools.cache
def _texts(harness: ModuleType, stream: str) -> tuple[str, ...]:
    if stream == "mooncake":
        return tuple(harness.mooncake_texts(REQUESTS, TRACE))
    return tuple(harness.chat_texts(REQUESTS))


def texts(harness: ModuleType, stream: str) -> list[str]:
    """The stream's first requests as text (built once per stream)."""
    if stream == "mooncake" and not TRACE.exists():
        pytest.skip("needs ../shared/traces/mooncake_conversation_trace.jsonl")
    return list(_texts(harness, stream))


def real_labels(harness: ModuleType, stream: str, in_flight: int,
                config: CacheAwareConfig) -> list[int]:
    python = harness.router_python()
    with harness.RealRouter(python, WORKERS, harness.router_args(config)) as real:
        return list(real.run(texts(harness, stream), in_flight))


@pytest.mark.parametrize("stream", ["mooncake", "chat"])
@pytest.mark.parametrize("in_flight", [1, 8])
def test_same_partition_as_the_real_router(harness: ModuleType, stream: str,
                                           in_flight: int) -> None:
    config = CacheAwareConfig()
    got = harness.canonical(real_labels(harness, stream, in_flight, config))
    labels, _ = harness.simulate(texts(harness, stream), WORKERS, in_flight, config)
    assert harness.canonical(labels) == got
    if in_flight == 1:
        assert set(got) == {0}  # loads are all 0 at each choice: the first worker
    else:
        assert len(set(got)) > 1
        # the check has teeth: a different threshold gives a different partition
        other, _ = harness.simulate(texts(harness, stream), WORKERS, in_flight,
                                    CacheAwareConfig(cache_threshold=0.9))
        assert harness.canonical(other) != got


def test_same_partition_when_load_is_unbalanced(harness: ModuleType) -> None:
    config = CacheAwareConfig(balance_abs_threshold=2)
    got = harness.canonical(real_labels(harness, "chat", 8, config))
    labels, unbalanced = harness.simulate(texts(harness, "chat"), WORKERS, 8, config)
    assert unbalanced > 0  # the shortest-queue branch chose some of these
    assert harness.canonical(labels) == got
