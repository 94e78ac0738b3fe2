"""radix-evict's policies in vLLM 0.33.0's CPU offload tier (``cache_policy_module_path``).

Launch vLLM with the offload connector and, in ``kv_connector_extra_config``::

    "eviction_policy": "radix_evict_gdsf",
    "cache_policy_module_path": "radix_evict.vllm",
    "radix_eviction_config": {"credit": 8.0}

vLLM looks the class up by name in this module; each ``radix_evict_<policy>`` is built here
on first use (PEP 562) for any policy on radix-evict's registry, and validates its config
when vLLM builds it. Importing this module never imports vLLM: only building a class does
(:mod:`radix_evict.vllm.policy`). See docs/vllm.md.
"""

from __future__ import annotations

from typing import Any

from radix_evict.vllm.names import CLASS_PREFIX, MODULE_PATH, class_name, policy_of

__all__ = ["CLASS_PREFIX", "MODULE_PATH", "class_name", "policy_of"]


def __getattr__(name: str) -> Any:
    """``radix_evict_<policy>``: the vLLM ``CachePolicy`` class running that policy."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    from radix_evict.vllm.policy import policy_class

    return policy_class(name)
