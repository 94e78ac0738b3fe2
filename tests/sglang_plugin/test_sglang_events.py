"""SGLang's trees deliver their events to a stateful policy as radix-evict's cache does.

Differential: the same request stream through radix-evict's RadixCache and through
SGLang 0.5.23's own trees (unified, Python core; legacy) with the plugin; a recording
policy (whose eviction order depends on what it hears) must hear the same callbacks, in
the same order, about the same nodes (the prefix each ends, its fields), with the same
clock. And a policy that raises inside a callback fails SGLang's cache operation with a
PolicyError naming it, leaving SGLang's tree consistent.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from helpers.sglang_rig import (
    PoolAllocator,
    build_sglang_cache,
    chat_events,
    radix_key,
    replay_radix_evict,
    replay_sglang,
    sglang_plugin,
)

from radix_evict import EvictionPolicy, PolicyError, registry
from radix_evict.policies.fingerprint import PrefixFingerprints
from radix_evict.sglang.adapter import BridgedStrategy
from radix_evict.sglang.events import make_events

__all__ = ["sglang_plugin"]

pytestmark = pytest.mark.usefixtures("sglang_plugin")

POOL = 1600
EVENTS = chat_events(40)
TREES = ("unified-py", "unified-rust", "legacy")  # rust selected: runs on the Python core


class Recorder(EvictionPolicy):
    """reuse in miniature, writing down every callback with what it could read."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[Any, ...]] = []
        self.times: list[tuple[float, float]] = []
        self._fp = PrefixFingerprints()
        self._reused: set[Any] = set()

    def score(self, node: Any) -> float:
        return node.last_access_time + (40 if node in self._reused else 0)  # type: ignore[no-any-return]

    def _note(self, event: str, *nodes: Any) -> None:
        for n in nodes:
            self.log.append((event, self._fp.of(n), n.num_tokens, n.prefix_len, n.hit_count,
                             n.priority, n.lock_ref, len(n.children), n.parent is None))
            self.times.append((n.last_access_time, n.creation_time))

    def on_hit(self, node: Any) -> None:
        self._reused.add(node)
        self._note("hit", node)

    def on_split(self, head: Any, tail: Any) -> None:
        if tail in self._reused:
            self._reused.add(head)
        self._note("split", head, tail)

    def on_insert(self, node: Any) -> None:
        self._note("insert", node)

    def on_evict(self, node: Any) -> None:
        self._note("evict", node)
        self._reused.discard(node)
        self._fp.forget(node)


def _as_sglang_policy(policy: EvictionPolicy, monkeypatch: pytest.MonkeyPatch) -> str:
    """Put ``policy`` into SGLang's strategy registry as the plugin's factories do."""
    from sglang.srt.mem_cache import utils

    def build(**config: Any) -> BridgedStrategy:
        return BridgedStrategy(policy, make_events(policy))

    build.radix_evict_bridged = True  # type: ignore[attr-defined]
    build.radix_evict_policy = policy.name  # type: ignore[attr-defined]
    monkeypatch.setitem(utils._EVICTION_POLICY_FACTORIES, policy.name, build)
    return policy.name


@pytest.mark.parametrize("page", [1, 16])
@pytest.mark.parametrize("tree", TREES)
def test_sglangs_trees_deliver_radix_evicts_callbacks_in_its_order(
    tree: str, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = Recorder()
    want = replay_radix_evict(EVENTS, expected, None, POOL, page)
    kinds = {e[0] for e in expected.log}
    assert kinds == {"hit", "split", "insert", "evict"} and want.evict_calls > 20
    got = Recorder()
    figures = replay_sglang(EVENTS, tree, _as_sglang_policy(got, monkeypatch), None, POOL, page)
    assert len(got.log) == len(expected.log)
    for i, (g, e) in enumerate(zip(got.log, expected.log, strict=True)):
        assert g == e, (i, g, e)
    # One clock: SGLang's unified clock is process-wide (radix-evict's + a constant); the
    # legacy tree's ticks are the plugin's own, from 0 as radix-evict's.
    offsets = {round(g - e, 6) for gt, et in zip(got.times, expected.times, strict=True)
               for g, e in zip(gt, et, strict=True)}
    assert len(offsets) == 1, sorted(offsets)[:5]
    assert figures.summary() == want.summary() and figures.hits == want.hits


@pytest.mark.parametrize("policy", ["reuse", "gdsf"])
def test_the_example_policies_decide_in_the_legacy_tree_as_in_radix_evict(policy: str) -> None:
    """reuse (callbacks) and gdsf (adds to a time) need radix-evict's clock, not seconds."""
    if policy not in registry.choices(extended=True):
        pytest.skip("the example package (radix-evict-costaware) is not installed")
    events = chat_events(60, seed=1)
    want = replay_radix_evict(events, policy, None, POOL, 1)
    lru = replay_radix_evict(events, "lru", None, POOL, 1)
    assert want.hits != lru.hits  # the replay tells the policy from recency
    for tree in ("legacy", "unified-py"):
        got = replay_sglang(events, tree, policy, None, POOL, 1)
        assert got.hits == want.hits and got.summary() == want.summary(), tree


# --------------------------------------------------------------------------- a policy that raises
class Boom(Exception):
    pass


def _legacy_consistent(cache: Any) -> None:
    """The legacy tree's own invariants: links, sizes, the evictable-leaf set."""
    nodes, stack = [], [cache.root_node]
    while stack:
        x = stack.pop()
        for k, c in x.children.items():
            assert c.parent is x and k == c.key.child_key(cache.page_size)
            assert len(c.value) == len(c.key)
            nodes.append(c)
            stack.append(c)
    total = sum(len(x.key) for x in nodes)
    assert cache.evictable_size() + cache.protected_size() == total
    leaves = {x for x in nodes if not x.children and x.lock_ref == 0}
    assert set(cache.evictable_leaves) == leaves


def _consistent(tree: str, cache: Any) -> None:
    if tree == "legacy":
        _legacy_consistent(cache)
    else:
        cache.tree_core.sanity_check([], [])


def _reuse_cache(tree: str, alloc: PoolAllocator) -> tuple[Any, Any]:
    if "reuse" not in registry.choices(extended=True):
        pytest.skip("the example package (radix-evict-costaware) is not installed")
    cache = build_sglang_cache(tree, alloc, "reuse")
    core = cache if tree == "legacy" else cache.tree_core
    events = core.eviction_strategy.events
    assert events is not None
    return cache, events


def _insert(cache: Any, alloc: PoolAllocator, tokens: list[int]) -> Any:
    from sglang.srt.mem_cache.base_prefix_cache import InsertParams

    slots = alloc.alloc(len(tokens))
    return cache.insert(InsertParams(key=radix_key(tokens), value=slots))


def _match(cache: Any, tokens: list[int]) -> Any:
    from sglang.srt.mem_cache.base_prefix_cache import MatchPrefixParams

    return cache.match_prefix(MatchPrefixParams(key=radix_key(tokens)))


def _evict(cache: Any, n: int) -> int:
    from sglang.srt.mem_cache.base_prefix_cache import EvictParams

    return cache.evict(EvictParams(num_tokens=n)).num_tokens_evicted  # type: ignore[no-any-return]


CALLBACK_OPS = ["on_hit", "on_split", "on_insert", "on_evict"]


@pytest.mark.parametrize("tree", ["unified-py", "legacy"])
@pytest.mark.parametrize("callback", CALLBACK_OPS)
def test_a_raising_callback_fails_the_operation_naming_the_policy_and_the_tree_holds(
    tree: str, callback: str
) -> None:
    alloc = PoolAllocator(64)
    cache, events = _reuse_cache(tree, alloc)
    _insert(cache, alloc, [1, 2, 3, 4, 5, 6, 7, 8])
    _insert(cache, alloc, [20, 21, 22, 23])

    def boom(*nodes: Any) -> None:
        raise Boom("the sketch is full")

    setattr(events, callback, boom)
    with pytest.raises(PolicyError) as info:
        if callback in ("on_hit", "on_split"):
            _match(cache, [1, 2, 3, 4, 9])  # ends inside [1..8]: a split, then hits
        elif callback == "on_insert":
            _insert(cache, alloc, [30, 31, 32])
        else:
            _evict(cache, 4)
    err = info.value
    assert err.policy == "reuse" and err.distribution == "radix-evict-costaware"
    assert f"policy 'reuse' from radix-evict-costaware 0.1.0 (entry point 'costaware'): " \
           f"{callback} raised Boom: the sketch is full" in str(err)
    assert isinstance(err.__cause__, Boom)
    _consistent(tree, cache)
    # Still a working tree that owns exactly the slots it holds: with the policy fixed,
    # everything evicts and the pool is whole again.
    setattr(events, callback, getattr(events.policy, callback))
    assert _match(cache, [1, 2, 3, 4]).device_prefix_len == 4
    _evict(cache, 64)
    _consistent(tree, cache)
    assert cache.evictable_size() == 0 and alloc.available_size() == 64


@pytest.mark.parametrize("tree", ["unified-py", "legacy"])
def test_a_raising_score_fails_the_eviction_naming_the_policy(
    tree: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    alloc = PoolAllocator(64)
    cache, _ = _reuse_cache(tree, alloc)
    _insert(cache, alloc, [1, 2, 3, 4])

    def boom(node: Any) -> float:
        raise Boom("no score today")

    core = cache if tree == "legacy" else cache.tree_core
    monkeypatch.setattr(core.eviction_strategy, "_score", boom)
    with pytest.raises(PolicyError, match=r"policy 'reuse' from .*: score\(\) raised Boom") as info:
        _evict(cache, 4)
    assert info.value.distribution == "radix-evict-costaware"
    _consistent(tree, cache)
    assert cache.evictable_size() == 4 and alloc.available_size() == 60


@pytest.mark.parametrize("tree", ["unified-py", "legacy"])
def test_a_policy_without_callbacks_gets_no_events(tree: str) -> None:
    cache = build_sglang_cache(tree, PoolAllocator(64), "gdsf")
    core = cache if tree == "legacy" else cache.tree_core
    assert isinstance(core.eviction_strategy, BridgedStrategy)
    assert core.eviction_strategy.events is None



# --------------------------------------------------------------------------- legacy checkpoint
def _fake_request(tokens: list[int], prompt_len: int) -> Any:
    """The fields of a request SGLang's legacy ``checkpoint`` reads (one row, slot 0)."""
    from array import array
    from types import SimpleNamespace

    kv = SimpleNamespace(req_pool_idx=0, swa_evict_floor=0, cache_inserted_len=0,
                         cache_protected_len=0)
    return SimpleNamespace(kv=kv, full_untruncated_fill_ids=array("q", tokens),
                           origin_input_ids=tokens[:prompt_len], extra_key=None,
                           cache_salt=None, priority=0, lock=None, last_node=None)


def test_legacy_checkpoints_re_match_is_no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """checkpoint inserts, then re-matches what it inserted (the unified tree does not):
    the plugin delivers no hit for it and stamps no tick, so both trees tell one story."""
    from types import SimpleNamespace

    tokens, prompt_len = list(range(100, 112)), 8
    logs = []
    for via_checkpoint in (True, False):
        policy = Recorder()
        alloc = PoolAllocator(64)
        cache = build_sglang_cache("legacy", alloc, _as_sglang_policy(policy, monkeypatch))
        slots = alloc.alloc(len(tokens))
        if via_checkpoint:
            row = torch.zeros((1, 64), dtype=torch.int64)
            row[0, : len(tokens)] = slots
            cache.req_to_token_pool = SimpleNamespace(
                req_to_token=row, write=row.__setitem__)
            req = _fake_request(tokens, prompt_len)
            cache.checkpoint(req, up_to=len(tokens))
            cache.unlock(req.lock)
        else:  # what checkpoint's insert does, and nothing else
            from sglang.srt.mem_cache.base_prefix_cache import InsertParams

            cache.insert(InsertParams(key=radix_key(tokens), value=slots))
            cache.insert(InsertParams(key=radix_key(tokens[:prompt_len]),
                                      value=slots[:prompt_len], inserted_len=prompt_len,
                                      priority=1))
        logs.append((policy.log, policy.times, cache._radix_evict_clock))
        _legacy_consistent(cache)
    assert [e[0] for e in logs[0][0]] == ["insert", "split", "split"]  # head, tail
    assert logs[0] == logs[1]
