"""vLLM 0.33.0's facts that radix-evict's adapter relies on, and the adapter's own names.

No vLLM import: the CLI, the check and the docs read these without vLLM installed.

vLLM's CPU offload tier builds its cache policy as
``CachePolicyFactory.get_cache_policy_cls(eviction_policy, cache_policy_module_path)``
(``vllm/v1/kv_offload/cpu/policies/factory.py``): a registered name (``lru``, ``arc``)
wins; any other name is ``getattr(import_module(cache_policy_module_path), name)``. Both keys
come from the offload connector's ``kv_connector_extra_config`` (``cpu/spec.py``), and the
class is built with one argument, ``cache_capacity`` (chunks).

So radix-evict's policy ``P`` runs in vLLM under the class name ``radix_evict_P`` of the
module ``radix_evict.vllm``: the prefix keeps radix-evict's ``lru`` from being shadowed by
vLLM's. Its config is the ``radix_eviction_config`` key of the same extra config.
"""

from __future__ import annotations

SUPPORTED_VERSION = "0.33.0"
DISTRIBUTION = "vllm"
MODULE_PATH = "radix_evict.vllm"  # what cache_policy_module_path names
CLASS_PREFIX = "radix_evict_"
CONNECTOR = "OffloadingConnector"  # the kv_connector whose CPU tier takes cache policies

# kv_connector_extra_config keys: vLLM's two, and radix-evict's one.
EVICTION_POLICY_KEY = "eviction_policy"
MODULE_PATH_KEY = "cache_policy_module_path"
CONFIG_KEY = "radix_eviction_config"
DEFAULT_EVICTION_POLICY = "lru"  # cpu/spec.py's default for eviction_policy

# vLLM's own modules the adapter and the check import (lazily).
POLICY_BASE_MODULE = "vllm.v1.kv_offload.cpu.policies.base"
FACTORY_MODULE = "vllm.v1.kv_offload.cpu.policies.factory"
MANAGER_MODULE = "vllm.v1.kv_offload.cpu.manager"
SPEC_MODULE = "vllm.v1.kv_offload.cpu.spec"
OFFLOAD_CONFIG_MODULE = "vllm.v1.kv_offload.config"


def class_name(policy: str) -> str:
    """The ``eviction_policy`` value that runs radix-evict's ``policy`` in vLLM."""
    return CLASS_PREFIX + policy


def policy_of(name: str) -> str | None:
    """The radix-evict policy an ``eviction_policy`` value names, or None if it names none."""
    if name.startswith(CLASS_PREFIX) and len(name) > len(CLASS_PREFIX):
        return name[len(CLASS_PREFIX):]
    return None


# cpu/policies/factory.py registers these names; they win over any module's class.
VLLM_POLICIES = ("lru", "arc")


def unknown_policy_message(name: str) -> str:
    """vLLM's words for a name it neither registers nor may import (no module path)."""
    return (f"Unknown cache policy: {name!r}. Supported: {list(VLLM_POLICIES)}. "
            "For an out-of-tree policy, also set cache_policy_module_path.")
