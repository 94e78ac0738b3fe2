"""radix-evict's policies inside SGLang 0.5.23's own trees: validation, routing, the node
adapter, and differential replays that must decide exactly as radix-evict's RadixCache."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from helpers.sglang_rig import (
    PoolAllocator,
    Request,
    build_sglang_cache,
    chat_events,
    radix_key,
    replay_radix_evict,
    replay_sglang,
    sglang_plugin,
)

from radix_evict import PolicyConfigError, RadixCache, registry
from radix_evict.sglang import strategies
from radix_evict.sglang.adapter import BridgedStrategy, node_view

__all__ = ["sglang_plugin"]

pytestmark = pytest.mark.usefixtures("sglang_plugin")

BUILTINS = ("lru", "lfu", "slru", "priority", "tlru", "fifo", "mru", "filo")
CONFIGS: dict[str, dict[str, Any] | None] = {
    "tlru": {"threshold": 256, "next_prompt_estimate": 32},
    "slru": {"protected_threshold": 3},
}
POOL = 1600  # tokens: small enough that most admissions evict


def _tree_core_name(cache: Any) -> str:
    return type(cache.tree_core).__name__


# --------------------------------------------------------------------------- validation
BAD = [
    ("slru", {"protected_treshold": 3}, "did you mean 'protected_threshold'"),
    ("slru", {"protected_threshold": "3"}, "protected_threshold"),
    ("slru", {"protected_threshold": 2.5}, "protected_threshold"),
    ("tlru", {"threshold": 4, "next_prompt_estimate": 6}, "greater than next_prompt_estimate"),
    ("tlru", {"threshold": -1, "next_prompt_estimate": 0}, "must be >= 0"),
    ("lru", {"window": 3}, "takes no config keys"),
    ("priority", {"weight": 1}, "takes no config keys"),
    ("gdsf", {"credit": "16"}, "credit"),
    ("gdsf", {"credits": 16}, "did you mean 'credit'"),
]


@pytest.mark.parametrize("tree", ["unified-py", "unified-rust", "legacy"])
@pytest.mark.parametrize(("policy", "config", "needle"), BAD)
def test_bad_configs_fail_sglangs_cache_construction_with_radix_evicts_message(
    tree: str, policy: str, config: dict[str, Any], needle: str
) -> None:
    with pytest.raises(PolicyConfigError, match=f"policy '{policy}'") as info:
        build_sglang_cache(tree, PoolAllocator(64), policy, config)
    assert needle in str(info.value)
    assert info.value.problems and info.value.problems[0].policy == policy


# Configs SGLang 0.5.23 accepts for its own policies and runs correctly.
SGLANG_ACCEPTS = [
    ("lru", None), ("lru", {}), ("lfu", None), ("fifo", None), ("mru", None), ("filo", None),
    ("priority", {}), ("slru", None), ("slru", {}), ("slru", {"protected_threshold": 0}),
    ("slru", {"protected_threshold": 1}), ("slru", {"protected_threshold": 4}),
    ("tlru", {"threshold": 1024, "next_prompt_estimate": 128}), ("tlru", {"threshold": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "config"), SGLANG_ACCEPTS)
def test_every_config_sglang_accepts_for_its_policies_still_builds_sglangs_strategy(
    policy: str, config: dict[str, Any] | None
) -> None:
    from sglang.srt.mem_cache import evict_policy, utils

    native = utils._EVICTION_POLICY_FACTORIES[policy].native
    strategy = utils.get_eviction_strategy(policy, config)
    assert type(strategy) is native and native.__module__ == evict_policy.__name__
    for key, value in (config or {}).items():
        assert getattr(strategy, key) == value
    for tree in ("unified-py", "unified-rust"):
        cache = build_sglang_cache(tree, PoolAllocator(64), policy, config)
        assert cache.evictable_size() == 0


# --------------------------------------------------------------------------- routing
def test_a_radix_evict_policy_with_the_rust_core_selected_runs_on_the_python_core(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        cache = build_sglang_cache("unified-rust", PoolAllocator(64), "gdsf")
    assert _tree_core_name(cache) == "UnifiedTreeCore"
    assert isinstance(cache.tree_core.eviction_strategy, BridgedStrategy)
    assert (
        "Using the Python TreeCore: eviction policy 'gdsf' comes from radix-evict" in caplog.text
    )


@pytest.mark.parametrize("policy", ["lru", "slru", "tlru"])
def test_sglangs_own_policies_keep_the_core_sglang_picks(policy: str) -> None:
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.unified_cache import tree_core_registry as reg
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType

    config = CONFIGS.get(policy)
    params = CacheInitParams(
        disable=False, req_to_token_pool=None, token_to_kv_pool_allocator=PoolAllocator(64),
        page_size=1, eviction_policy=policy, eviction_policy_config=config,
        tree_components=(ComponentType.FULL,),
    )  # fmt: skip
    sglangs_reason = reg._rust_fallback_reason.__wrapped__(params)
    assert reg._rust_fallback_reason(params) == sglangs_reason
    cache = build_sglang_cache("unified-rust", PoolAllocator(64), policy, config)
    expected = "RustUnifiedTreeCore" if sglangs_reason is None else "UnifiedTreeCore"
    assert _tree_core_name(cache) == expected


# --------------------------------------------------------------------------- the node adapter
def _sglang_nodes(cache: Any) -> dict[tuple[int, ...], Any]:
    out: dict[tuple[int, ...], Any] = {}
    stack = [(cache.tree_core.root_node, ())]
    while stack:
        node, path = stack.pop()
        for child in node.children.values():
            p = (*path, *child.key.token_ids)
            out[p] = child
            stack.append((child, p))
    return out


def _radix_evict_nodes(cache: RadixCache) -> dict[tuple[int, ...], Any]:
    out = {}
    for node in cache.iter_nodes():
        parts, x = [], node
        while x.parent is not None:
            parts.append(x.key.tolist())
            x = x.parent
        out[tuple(t for part in reversed(parts) for t in part)] = node
    return out


def _drive_both(events: list[tuple[str, Request]], policy: str, sg_policy: str) -> tuple[Any, Any]:
    """Both caches after the same operations (no eviction: every node stays comparable)."""
    from radix_evict import KVPool

    pool = KVPool(size=20_000, page_size=1, device="cpu", layers=0)
    re_cache = RadixCache(pool, policy=policy, policy_config=CONFIGS.get(policy))
    alloc = PoolAllocator(20_000)
    sg_cache = build_sglang_cache("unified-py", alloc, sg_policy, CONFIGS.get(policy))
    from sglang.srt.mem_cache.base_prefix_cache import InsertParams, MatchPrefixParams

    for kind, req in events:
        if kind != "finish":
            continue
        full = np.concatenate([req.prompt, req.out])
        m = re_cache.match_prefix(full)
        row = __import__("torch").cat([m.indices, pool.alloc(len(full) - m.prefix_len)])
        re_cache.insert(full, row, priority=req.priority, prev_prefix_len=m.prefix_len)
        sm = sg_cache.match_prefix(MatchPrefixParams(key=radix_key(full)))
        srow = __import__("torch").cat(
            [sg_cache.path_device_indices(sm.last_device_node)[: sm.device_prefix_len],
             alloc.alloc(len(full) - sm.device_prefix_len)]
        )
        sg_cache.insert(InsertParams(key=radix_key(full), value=srow,
                                     prev_prefix_len=sm.device_prefix_len, priority=req.priority))
        m = re_cache.match_prefix(req.prompt[: len(req.prompt) // 2])  # splits, re-stamps
        sg_cache.match_prefix(MatchPrefixParams(key=radix_key(req.prompt[: len(req.prompt) // 2])))
    return re_cache, sg_cache


@pytest.mark.parametrize("policy", ["gdsf", "tlru"])
def test_adapted_sglang_nodes_read_as_radix_evicts_nodes(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sglang.srt.mem_cache import utils

    sg_policy = policy if policy == "gdsf" else "re_tlru"
    monkeypatch.setitem(utils._EVICTION_POLICY_FACTORIES, "re_tlru",
                        strategies.bridged("tlru", registry))
    re_cache, sg_cache = _drive_both(chat_events(12, seed=3)[:60], policy, sg_policy)
    ours, theirs = _radix_evict_nodes(re_cache), _sglang_nodes(sg_cache)
    assert set(ours) == set(theirs) and len(ours) > 10
    offsets = set()  # SGLang's clock is process-wide: its times are radix-evict's + a constant
    for path, x in ours.items():
        v = node_view(theirs[path])
        for f in ("num_tokens", "prefix_len", "history_len", "hit_count", "priority", "lock_ref"):
            assert getattr(v, f) == getattr(x, f), (f, path[:4])
        offsets.add(round(v.creation_time - x.creation_time, 6))
        offsets.add(round(v.last_access_time - x.last_access_time, 6))
        assert (v.parent is None) == (x.parent is None)
        assert len(v.children) == len(x.children)
    assert len(offsets) == 1, sorted(offsets)[:5]


# --------------------------------------------------------------------------- differential replays
EVENTS = chat_events(40)


def _bridged_name(policy: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """SGLang's name for radix-evict's ``policy`` through the adapter (gdsf: the plugin's own)."""
    if policy == "gdsf":
        return policy
    from sglang.srt.mem_cache import utils

    name = f"re_{policy}"
    factory = strategies.bridged(policy, registry)
    monkeypatch.setitem(utils._EVICTION_POLICY_FACTORIES, name, factory)
    return name


@pytest.mark.parametrize("page", [1, 16])
@pytest.mark.parametrize("policy", ["gdsf", *BUILTINS])
def test_a_bridged_policy_decides_in_sglangs_unified_tree_as_in_radix_evict(
    policy: str, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = CONFIGS.get(policy)
    expected = replay_radix_evict(EVENTS, policy, config, POOL, page)
    assert expected.evict_calls > 20  # eviction decides this replay
    name = _bridged_name(policy, monkeypatch)
    for tree in ("unified-py", "unified-rust"):  # rust selected: falls back to Python
        got = replay_sglang(EVENTS, tree, name, config, POOL, page)
        assert got.summary() == expected.summary(), tree
        assert got.hits == expected.hits, tree
    if policy != "gdsf":  # and SGLang's native strategy agrees with both
        native = replay_sglang(EVENTS, "unified-py", policy, config, POOL, page)
        assert native.hits == expected.hits


def test_gdsf_decides_as_radix_evict_where_the_clock_spacing_matters() -> None:
    """A replay where radix-evict's earlier clock (a tick per matched node, two per split)
    made one eviction decision differently from SGLang's unified tree."""
    events = chat_events(80, seed=2)
    expected = replay_radix_evict(events, "gdsf", None, POOL, 1)
    got = replay_sglang(events, "unified-py", "gdsf", None, POOL, 1)
    assert got.hits == expected.hits and got.summary() == expected.summary()


def test_gdsf_differs_from_lru_here() -> None:
    """The replays above would not notice a gdsf that had become LRU."""
    gdsf = replay_radix_evict(EVENTS, "gdsf", None, POOL, 1)
    lru = replay_radix_evict(EVENTS, "lru", None, POOL, 1)
    assert gdsf.hits != lru.hits


@pytest.mark.parametrize("policy", ["gdsf", "tlru", "lru"])
def test_the_legacy_tree_runs_bridged_policies(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _bridged_name(policy, monkeypatch)
    got = replay_sglang(EVENTS, "legacy", name, CONFIGS.get(policy), POOL, 1)
    assert got.evict_calls > 20 and got.hit_tokens > 0
