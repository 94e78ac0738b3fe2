"""radix-evict's hybrid host tier decides what SGLang 0.5.23's unified tree with HiCache decides.

SGLang's real ``UnifiedRadixCache`` (Python tree core) with its ``SWAComponent`` or
``MambaComponent`` and HiCache on (its real ``HostPoolGroup`` over index-only host pools,
its ``HybridCacheController``'s own ``write``/``load`` allocation paths with the CUDA copies
replaced by acks that complete at once: ``helpers.hybrid_host_rig``) replays a multi-turn
chat beside radix-evict's ``HybridRadixCache`` with a ``HostTierSpec`` of the same ratio
(so the same host pool sizes). The operations are ``helpers.hybrid_rig``'s plus HiCache's
load-back after the match. After every arrival and every finish both must agree on every
operation's result (match lengths, host hit per component, load-back success and the
prefix it gives, evictions asked and freed, admissions, checkpoints and inserts) and on
the ledgers: device free / evictable / protected per component, host free slots per
component host pool, and, cumulatively per component, what was written to host, loaded
back and freed on host by the tree (host eviction).

The small pools evict on most arrivals, back up and evict on host all the time, and load
back from host now and then (page 16: often); the long streams (2,091 requests) run at
the no-host rig's sizes through SGLang's Python and Rust tree cores.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest
from helpers.sglang_env import import_sglang
from helpers.sglang_rig import chat_events

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

SHORT = chat_events(convs=100, seed=1)  # 362 requests
LONG = chat_events(convs=600, seed=1)  # 2,091 requests
MAMBA_GRID = 64
WRITE_POLICIES = ("write_through", "write_through_selective")
# kind: (full tokens, window tokens or Mamba states, window)
SMALL = {"swa": (2000, 640, 128), "mamba": (1504, 6, 0)}


@pytest.fixture(scope="module")
def rig() -> Any:
    import_sglang()  # skips when build/sglang-env is missing; `make test` builds it
    from helpers import hybrid_host_rig, hybrid_rig

    return hybrid_rig, hybrid_host_rig


def compare(rig: Any, kind: str, events: list, full: int, aux: int, page: int, window: int,
            policy: str, write_policy: str, ratio: float, backend: str = "python",
            ) -> Counter:  # fmt: skip
    base, host = rig
    sg = host.SGLangHostSide(kind, full, aux, page, window, policy, MAMBA_GRID, write_policy,
                             ratio, backend)  # fmt: skip
    rx = host.RadixEvictHostSide(kind, full, aux, page, window, policy, MAMBA_GRID,
                                 write_policy, ratio)  # fmt: skip
    seen: Counter = Counter()
    for i, (a, b) in enumerate(zip(base.replay(sg, events), base.replay(rx, events),
                                   strict=True)):  # fmt: skip
        what, req = events[i]
        assert (a.ops, a.ledger) == (b.ops, b.ledger), (
            f"event {i} ({what} request {req.rid}):\n  {host.diff(a, b)}")  # fmt: skip
        if i % 64 == 0:
            rx.cache.check()  # radix-evict's ledgers, leaves, LRUs and host pools
        for op in b.ops:
            seen[op[0]] += 1
            if op[0] == "host" and (op[1] or op[2] or op[3]):
                seen["host-hit"] += 1
            if op[0] == "load_back" and op[1]:
                seen["loaded"] += 1
    rx.cache.check()
    assert rx.cache.protected == [0, 0, 0]  # nothing in flight at the end
    for c in (0, rx.aux):  # every device slot free or in the tree
        assert rx.pools.free_count[c] + rx.cache.evictable[c] == rx.pools.size[c]
    led = dict(zip(host.LEDGER, b.ledger, strict=True))
    seen.update(
        {k: v for k, v in led.items() if k.startswith(("written", "loaded ", "host freed"))}
    )
    return seen


CASES = [
    pytest.param(kind, page, wp, ratio, id=f"{kind}-page{page}-{wp}-ratio{ratio:g}")
    for kind, page, wp, ratio in itertools.product(("swa", "mamba"), (1, 16), WRITE_POLICIES,
                                                   (1.0, 2.0))
]  # fmt: skip


@pytest.mark.parametrize(("kind", "page", "write_policy", "ratio"), CASES)
def test_small_pools(rig: Any, kind: str, page: int, write_policy: str, ratio: float) -> None:
    full, aux, window = SMALL[kind]
    seen = compare(rig, kind, SHORT, full, aux, page, window, "lru", write_policy, ratio)
    assert seen["match"] == 362 and seen["evict"] > 200
    assert seen["written full"] > 1500 and seen["written aux"] > 0
    if write_policy == "write_through":  # selective backs up less: the host fills less
        assert seen["host freed full"] > 0 and seen["host freed aux"] > 0
    assert seen["load_back"] > 0  # host hits met
    if (kind, page, write_policy) != ("mamba", 1, "write_through_selective"):
        # (there both load-backs the stream attempts fail)
        assert seen["loaded"] > 0 and seen["loaded full"] > 0


@pytest.mark.parametrize(("kind", "page", "write_policy", "ratio", "policy"), [
    ("swa", 1, "write_through", 1.0, "lfu"),
    ("swa", 16, "write_through_selective", 2.0, "priority"),
    ("swa", 16, "write_through", 0.5, "fifo"), ("mamba", 1, "write_through", 2.0, "lfu"),
    ("mamba", 16, "write_through_selective", 1.0, "priority"),
    ("mamba", 16, "write_through", 0.5, "mru"),
])  # fmt: skip
def test_policies_and_tight_host(rig: Any, kind: str, page: int, write_policy: str, ratio: float,
                                 policy: str) -> None:  # fmt: skip
    """Other eviction policies (they order host leaves too) and a host smaller than the
    device (ratio 0.5: backups fail and roll back)."""
    full, aux, window = SMALL[kind]
    seen = compare(rig, kind, SHORT, full, aux, page, window, policy, write_policy, ratio)
    assert seen["match"] == 362 and seen["written full"] > 0 and seen["loaded"] > 0


@pytest.mark.parametrize("backend", ["python", "rust"])
@pytest.mark.parametrize(("kind", "page", "write_policy", "ratio"), [
    ("swa", 1, "write_through", 1.0), ("swa", 16, "write_through", 1.0),
    ("mamba", 1, "write_through_selective", 2.0), ("mamba", 16, "write_through", 1.0),
])  # fmt: skip
def test_long_stream(rig: Any, kind: str, page: int, write_policy: str, ratio: float,
                     backend: str) -> None:  # fmt: skip
    """The no-host rig's long streams and sizes, through both of SGLang's tree cores."""
    full, aux, window = (8000, 3000, 256) if kind == "swa" else (8000, 48, 0)
    seen = compare(rig, kind, LONG, full, aux, page, window, "lru", write_policy, ratio,
                   backend)  # fmt: skip
    assert seen["match"] == 2091 and seen["admitted"] == 2091
    assert seen["loaded"] >= 10 and seen["host freed full"] > 10000
