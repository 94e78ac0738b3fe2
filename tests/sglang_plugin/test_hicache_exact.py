"""radix-evict's host tier decides what SGLang 0.5.23's HiCache decides, step by step.

The same small multi-turn chat is replayed through SGLang's own ``UnifiedRadixCache`` with
HiCache enabled (Python TreeCore, FULL component; the transfer controller is the CPU stub
of ``helpers.hicache_stub``, whose copies finish at once and whose acks are processed right
after each operation, so SGLang's write-through and load-back locks are released before the
next operation: radix-evict's model of a transfer) and through radix-evict's ``RadixCache``
with a ``HostTierSpec`` of the same size (SGLang's sizing for ``--hicache-ratio``).

After every arrive and every finish the two must agree exactly on: each operation's result
(match: device prefix and host hit length; load-back success; evict: asked and freed;
alloc; insert: prefix length), the set of device-resident nodes and the set of
host-resident nodes (each named by its root path's tokens), and the cumulative host
counters (tokens written to host, loaded back, host-evicted, reclaimed under write_back,
dropped with a write_back drop). radix-evict's own invariants are checked after every step.

The matrix covers every write policy, pages 1 and 16, host ratios 1 and 2, LRU and LFU; a
device pool of 1280 tokens evicts on most arrivals, now and then has no room to load a
host hit back and now and then refuses an admission. A directed case covers a host hit under
the load-back threshold, which the chat never produces.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from helpers.sglang_env import import_sglang
from helpers.sglang_rig import Request, chat_events

from radix_evict.testing.invariants import check_cache

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

WRITE_POLICIES = ("write_through", "write_through_selective", "write_back")
DEVICE_TOKENS = 1280
EVENTS = chat_events(convs=80, seed=3)

CASES = [
    pytest.param(wp, page, ratio, policy, id=f"{wp}-page{page}-ratio{ratio:g}-{policy}")
    for wp, page, ratio, policy in itertools.product(WRITE_POLICIES, (1, 16), (1.0, 2.0),
                                                     ("lru", "lfu"))
]  # fmt: skip


@pytest.fixture(scope="module")
def stub() -> Any:
    import_sglang()  # skips the module when build/sglang-env is missing
    from helpers import hicache_stub

    return hicache_stub


def first_difference(sg: Any, rx: Any) -> str | None:
    """What differs between SGLang's step and radix-evict's, or None."""
    out = []
    if sg.ops != rx.ops:
        out.append(f"operations: SGLang {sg.ops} | radix-evict {rx.ops}")
    for k in sg.counters:
        if sg.counters[k] != rx.counters[k]:
            out.append(f"{k} tokens: SGLang {sg.counters[k]} | radix-evict {rx.counters[k]}")
    for tier in ("device", "host"):
        a, b = getattr(sg, tier), getattr(rx, tier)
        if a != b:
            only_sg = sorted(sg.nodes[x] for x in a - b)
            only_rx = sorted(rx.nodes[x] for x in b - a)
            out.append(f"{tier}-resident nodes: only in SGLang {only_sg[:6]} | "
                       f"only in radix-evict {only_rx[:6]}")  # fmt: skip
    return "\n  ".join(out) if out else None


@pytest.mark.parametrize(("write_policy", "page", "ratio", "policy"), CASES)
def test_host_tier_decides_as_sglang_hicache(
    stub: Any, write_policy: str, page: int, ratio: float, policy: str
) -> None:
    D = DEVICE_TOKENS // page * page
    steps = _compare(stub, EVENTS, write_policy, D, ratio, page, policy)
    assert len(steps) == len(EVENTS)
    activity = dict.fromkeys(("loads", "refused", "evicts"), 0)
    for op in (op for step in steps for op in step.ops):
        if op[0] == "load_back":
            activity["loads" if op[2] else "refused"] += 1
        elif op[0] == "evict":
            activity["evicts"] += 1
    # The workload must exercise the host tier, or the comparison proves little.
    assert activity["evicts"] > 20 and activity["loads"] > 5 and activity["refused"] > 0, activity
    assert steps[-1].counters["written"] > 0 and steps[-1].counters["loaded"] > 0


def _compare(stub: Any, events: list[Any], write_policy: str, device: int, ratio: float,
             page: int = 1, policy: str = "lru") -> list[Any]:  # fmt: skip
    """Replay ``events`` on both sides, assert every step agrees; return SGLang's steps."""
    H = stub.host_tokens(device, ratio, page)
    sg = stub.SGLangHiCache(policy, write_policy, device, H, page)
    rx = stub.RadixEvictHiCache(policy, write_policy, device, H, page)
    steps = []
    for a, b in zip(stub.replay(events, sg, page), stub.replay(events, rx, page), strict=True):
        check_cache(rx.cache, held_by_callers=b.held)
        diff = first_difference(a, b)
        assert diff is None, (
            f"{write_policy} page {page} ratio {ratio:g} {policy}: first divergence at event "
            f"{a.event} ({a.what}):\n  {diff}\n  counters SGLang {a.counters}"
        )
        steps.append(a)
    sg.check_end(device)
    rx.check_end(device)
    return steps


@pytest.mark.parametrize("write_policy", ["write_through", "write_back"])
def test_a_host_hit_under_the_threshold_is_recomputed_and_its_insert_takes_it_back(
    stub: Any, write_policy: str
) -> None:
    """A device prefix S, then 5 host-only tokens of A: SGLang does not load 5 < 10 tokens
    back; the request recomputes them and its insert gives the host-only head of A the
    request's slots (hicache.md sections 7 and 8)."""
    fresh = iter(range(20_000, 10**6))

    def toks(n: int) -> np.ndarray:
        return np.array([next(fresh) for _ in range(n)], dtype=np.int64)

    S, A, C = toks(20), toks(30), toks(10)
    reqs = [
        Request(0, np.concatenate([S, A]), toks(4), 0),  # S+A, then its output
        Request(1, np.concatenate([S, C]), toks(2), 0),  # S shared: split S | A
        Request(2, toks(40), toks(2), 0),  # pressure: A (and C) leave the device
        Request(3, np.concatenate([S, A[:5], toks(10)]), toks(2), 0),  # S on device, 5 of A on host
    ]
    events = [(kind, r) for r in reqs for kind in ("arrive", "finish")]
    steps = _compare(stub, events, write_policy, device=64, ratio=2.0)
    last_match = [op for op in steps[-2].ops if op[0] in ("match", "load_back")]
    assert last_match == [("match", 20, 5), ("load_back", 5, False)], steps[-2].ops
    # The recomputed head of A is on both tiers now (its host copy kept, nothing written).
    head = [d for d in steps[-1].nodes.values() if d.startswith("[20:25)")]
    assert len(head) == 1 and head[0].endswith(" DH"), head
