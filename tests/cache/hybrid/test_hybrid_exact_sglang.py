"""radix-evict's hybrid cache decides what SGLang 0.5.23's unified tree decides, event by event.

SGLang's real ``UnifiedRadixCache`` (its Python tree core, and on the long streams its
Rust one too) with its ``SWAComponent`` (over its
``SWATokenToKVPoolAllocator``) or its ``MambaComponent`` (over its
``HybridReqToTokenPool``) replays a multi-turn chat beside radix-evict's
``HybridRadixCache``; after every arrival and every finish both must agree on
every operation's result (match lengths, evictions asked and freed per
component, admissions, insert prefix lengths, whether a state existed) and on
the pools and ledgers per component (free, evictable, protected), which is
where every free shows. The operations are ``helpers.hybrid_rig``'s (window models
also checkpoint each request after its prefill, to a branching point where the match
reported one, as SGLang's scheduler does).

The long streams (2,091 requests, pages 1 and 16) are the issue's goal; the
small pools refuse admissions now and then and evict on most arrivals.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from helpers.sglang_env import import_sglang
from helpers.sglang_rig import chat_events

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

LONG = chat_events(convs=600, seed=1)  # 2,091 requests
SHORT = chat_events(convs=100, seed=1)  # 362 requests
MAMBA_GRID = 64  # SGLang's mamba_cache_chunk_size on most models (FLA's chunk)


@pytest.fixture(scope="module")
def rig() -> Any:
    import_sglang()  # skips when build/sglang-env is missing; `make test` builds it
    from helpers import hybrid_rig

    return hybrid_rig


def compare(rig: Any, kind: str, events: list, full: int, aux: int, page: int, window: int,
            policy: str, backend: str = "python") -> Counter:  # fmt: skip
    sg = rig.SGLangSide(kind, full, aux, page, window, policy, MAMBA_GRID, backend=backend)
    rx = rig.RadixEvictSide(kind, full, aux, page, window, policy, MAMBA_GRID)
    seen: Counter = Counter()
    for i, (a, b) in enumerate(zip(rig.replay(sg, events), rig.replay(rx, events), strict=True)):
        what, req = events[i]
        assert (a.ops, a.ledger) == (b.ops, b.ledger), (
            f"event {i} ({what} request {req.rid}):\n  SGLang      {a.ops} {a.ledger}\n"
            f"  radix-evict {b.ops} {b.ledger}")  # fmt: skip
        if i % 64 == 0:
            rx.cache.check()  # radix-evict's ledgers, leaf set and LRU against its nodes
        for op in b.ops:
            seen[op[0]] += 1
            if op[0] == "match" and op[1] < op[2]:
                seen["cut"] += 1  # the auxiliary component ended the reusable prefix early
            if op[0] == "evict" and op[2]:
                seen["aux-evict"] += 1
            if op[0] == "checkpoint" and op[2]:
                seen["branch"] += 1  # the prefill checkpoint stopped at a branching point
    rx.cache.check()
    assert rx.cache.protected == [0, 0, 0]  # nothing in flight at the end: no lock left
    for c in (0, rx.aux):  # every slot free or in the tree: none leaked or freed twice
        assert rx.pools.free_count[c] + rx.cache.evictable[c] == rx.pools.size[c]
    return seen


@pytest.mark.parametrize("backend", ["python", "rust"])
@pytest.mark.parametrize("page", [1, 16])
def test_swa_long_stream(rig: Any, page: int, backend: str) -> None:
    seen = compare(rig, "swa", LONG, 8000, 3000, page, 256, "lru", backend)
    assert seen["match"] == 2091 and seen["admitted"] == 2091
    assert seen["checkpoint"] == 2091  # every request checkpointed after its prefill
    assert seen["aux-evict"] > 1000 and seen["cut"] > 250  # tombstones matter here
    assert seen["branch"] > 250  # and branching points bring them back


@pytest.mark.parametrize(("page", "policy"), [(1, "lfu"), (16, "priority"), (1, "fifo"),
                                              (16, "mru")])  # fmt: skip
def test_swa_small_pool(rig: Any, page: int, policy: str) -> None:
    seen = compare(rig, "swa", SHORT, 2000, 640, page, 128, policy)
    assert seen["refused"] > 0 and seen["evict"] > 200


@pytest.mark.parametrize("backend", ["python", "rust"])
@pytest.mark.parametrize("page", [1, 16])
def test_mamba_long_stream(rig: Any, page: int, backend: str) -> None:
    seen = compare(rig, "mamba", LONG, 8000, 48, page, 0, "lru", backend)
    assert seen["match"] == 2091 and seen["admitted"] == 2091
    assert seen["aux-evict"] > 800 and seen["cut"] > 1000  # states decide the reusable prefix


@pytest.mark.parametrize(("page", "policy"), [(1, "lfu"), (16, "priority"), (16, "filo")])
def test_mamba_small_pool(rig: Any, page: int, policy: str) -> None:
    seen = compare(rig, "mamba", SHORT, 1500, 6, page, 0, policy)
    assert seen["evict"] > 200 and seen["aux-evict"] > 50 and seen["refused"] > 0


@pytest.mark.parametrize("page", [1, 16])
def test_mamba_states_per_path_cap(rig: Any, page: int) -> None:
    """SGLang's --mamba-max-states-per-path 2: the shallowest states beyond two go."""
    from sglang.srt.mem_cache.unified_cache.components.base import ComponentType

    sg = rig.SGLangSide("mamba", 4000, 40, page, 0, "lru", MAMBA_GRID, states_cap=2)
    assert sg.cache.components[ComponentType.MAMBA].mamba_max_states_per_path == 2
    rx = rig.RadixEvictSide("mamba", 4000, 40, page, 0, "lru", MAMBA_GRID, states_cap=2)
    dropped = 0
    for i, (a, b) in enumerate(zip(rig.replay(sg, SHORT), rig.replay(rx, SHORT), strict=True)):
        assert (a.ops, a.ledger) == (b.ops, b.ledger), f"event {i}: {a} | {b}"
        dropped = max(dropped, 40 - b.ledger[1] - b.ledger[3] - b.ledger[5])
    assert dropped > 0  # states in flight or freed by the cap: the cap did act
