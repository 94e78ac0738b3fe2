"""radix_evict.vllm inside vLLM 0.33.0's real factory, spec and manager: lookup by name, strict
configs from kv_connector_extra_config, and a policy that raises."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from radix_evict import (
    EvictionPolicy,
    PolicyConfigError,
    PolicyError,
    PolicySpec,
    TreeNode,
    hookimpl,
    registry,
)
from radix_evict.vllm.launch import build_manager
from radix_evict.vllm.replay import chunk_key, replay

MODULE = "radix_evict.vllm"


def extra(policy: str, **more: Any) -> dict[str, Any]:
    return {"cpu_bytes_to_use": 1, "eviction_policy": policy, "cache_policy_module_path": MODULE,
            **more}


def factory() -> Any:
    from vllm.v1.kv_offload.cpu.policies.factory import CachePolicyFactory

    return CachePolicyFactory


def test_classes_resolve_by_name(vllm: types.ModuleType) -> None:
    from vllm.v1.kv_offload.cpu.policies.base import CachePolicy

    cls = factory().get_cache_policy_cls("radix_evict_gdsf", MODULE)
    assert issubclass(cls, CachePolicy) and cls.__name__ == "radix_evict_gdsf"
    assert factory().get_cache_policy_cls("radix_evict_gdsf", MODULE) is cls


def test_vllms_own_names_win(vllm: types.ModuleType) -> None:
    from vllm.v1.kv_offload.cpu.policies.lru import LRUCachePolicy

    assert factory().get_cache_policy_cls("lru", MODULE) is LRUCachePolicy


def test_a_name_without_the_prefix_says_which_to_use(vllm: types.ModuleType) -> None:
    with pytest.raises(AttributeError, match="did you mean 'radix_evict_gdsf'"):
        factory().get_cache_policy_cls("gdsf", MODULE)


def test_an_unknown_policy_is_radix_evicts_error(vllm: types.ModuleType) -> None:
    with pytest.raises(PolicyConfigError, match="gdsf"):
        factory().get_cache_policy_cls("radix_evict_gdsff", MODULE)


def test_the_config_comes_from_the_launch_and_is_strict(vllm: types.ModuleType) -> None:
    manager = build_manager(extra("radix_evict_gdsf", radix_eviction_config={"credit": 3.5}))
    assert manager._policy.tree.policy.config.credit == 3.5
    text = build_manager(extra("radix_evict_gdsf", radix_eviction_config='{"credit": 2.0}'))
    assert text._policy.tree.policy.config.credit == 2.0
    with pytest.raises(PolicyConfigError) as e:
        build_manager(extra("radix_evict_gdsf", radix_eviction_config={"credit": -1, "x": 1}))
    assert {p.key for p in e.value.problems} == {"credit", "x"}


def test_a_misspelt_radix_key_is_refused(vllm: types.ModuleType) -> None:
    with pytest.raises(PolicyConfigError, match="did you mean 'radix_eviction_config'"):
        build_manager(extra("radix_evict_lru", radix_eviction_confg={}))


def test_a_config_that_is_not_an_object_is_refused(vllm: types.ModuleType) -> None:
    with pytest.raises(PolicyConfigError, match="JSON object"):
        build_manager(extra("radix_evict_lru", radix_eviction_config=[1]))
    with pytest.raises(PolicyConfigError):
        build_manager(extra("radix_evict_gdsf", radix_eviction_config="{credit: 1}"))


class Armed(EvictionPolicy):
    """LRU until armed; then score() raises."""

    name = "armed"
    armed = False

    def score(self, node: TreeNode) -> float:
        if Armed.armed:
            raise ZeroDivisionError("score blew up")
        return float(node.last_access_time)


class ArmedPlugin:
    @hookimpl
    def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name="armed", policy=Armed, summary="raises when armed"))


@pytest.fixture
def armed() -> Iterator[None]:
    registry.add_plugin(ArmedPlugin(), name="armed-ep", distribution="acme-policies",
                        version="1.2")
    Armed.armed = False
    yield
    Armed.armed = False
    registry.remove_plugin("armed-ep")


def test_a_policy_that_raises_fails_that_store_and_leaves_the_tree_whole(
    vllm: types.ModuleType, armed: None
) -> None:
    manager = build_manager(extra("radix_evict_armed"), num_chunks=4)
    replay(manager, [[1, 2, 3, 4]])
    tree = manager._policy.tree
    before = sorted(tree._nodes)
    Armed.armed = True
    with pytest.raises(PolicyError) as e:
        replay(manager, [[5, 6]])
    assert (e.value.policy, e.value.distribution) == ("armed", "acme-policies")
    assert "acme-policies 1.2" in str(e.value)
    assert sorted(tree._nodes) == before and tree.problems() == []
    assert all(manager.lookup(chunk_key(b), _ctx(vllm)).name == "HIT" for b in [1, 2, 3, 4])
    Armed.armed = False
    out = replay(manager, [[5, 6]], record=True)
    assert out.failed_stores == 0 and len(out.evictions[0]) == 2


def _ctx(vllm: types.ModuleType) -> Any:
    from vllm.v1.kv_offload.base import ReqContext

    return ReqContext(req_id="probe")


def test_a_json_config_in_the_kv_transfer_config_text(vllm: types.ModuleType) -> None:
    # What `vllm serve --kv-transfer-config '{...}'` hands the connector: a parsed object.
    cfg = json.loads('{"kv_connector": "OffloadingConnector", "kv_role": "kv_both", '
                     '"kv_connector_extra_config": {"cpu_bytes_to_use": 1000000, '
                     '"eviction_policy": "radix_evict_reuse", '
                     '"cache_policy_module_path": "radix_evict.vllm", '
                     '"radix_eviction_config": {"credit": 10}}}')
    manager = build_manager(cfg["kv_connector_extra_config"])
    assert manager._policy.tree.policy.config.credit == 10
