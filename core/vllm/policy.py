"""``radix_evict_<policy>`` classes for vLLM's ``CachePolicyFactory``, built on first use.

vLLM resolves ``eviction_policy`` with ``getattr(radix_evict.vllm, name)``; the package's
``__getattr__`` lands here. A name without the prefix, or for a policy the registry does not
know, fails that lookup with radix-evict's message (vLLM's startup shows it). Building the
class imports vLLM (:func:`radix_evict.vllm.cache_policy.vllm_cache_policy_base`); nothing
else does.
"""

from __future__ import annotations

import importlib
from typing import Any

from radix_evict.vllm.names import MODULE_PATH, policy_of

_CLASSES: dict[str, type[Any]] = {}


def policy_class(name: str) -> type[Any]:
    """The vLLM ``CachePolicy`` subclass that runs the radix-evict policy ``name`` names.

    Raises AttributeError for a name this module does not serve (what ``getattr`` would),
    and :class:`~radix_evict.PolicyConfigError` for ``radix_evict_<unknown>``.
    """
    cls = _CLASSES.get(name)
    if cls is not None:
        return cls
    from radix_evict.policies.registry import registry
    from radix_evict.vllm.config import wrong_class_hint

    policy = policy_of(name)
    if policy is None:
        raise AttributeError(f"module {MODULE_PATH!r} has no attribute {name!r}: "
                             + wrong_class_hint(name, registry.choices(extended=True)))
    registry.get(policy)  # an unknown policy: PolicyConfigError, with "did you mean"
    base = importlib.import_module("radix_evict.vllm.cache_policy").vllm_cache_policy_base()
    cls = type(name, (base,), {"__module__": MODULE_PATH, "__qualname__": name,
                               "radix_evict_policy": policy})
    _CLASSES[name] = cls
    return cls
