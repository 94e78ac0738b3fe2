"""The radix-evict half of a vLLM offload config: which policy, its JSON config, found where.

vLLM 0.33.0 builds a cache policy with ``cache_capacity`` alone, so the adapter finds the
launch's ``kv_connector_extra_config`` itself: the offloading spec that is building the
manager (``CPUOffloadingSpec.get_manager``, or the tiering spec) is a few frames up the
stack, holding ``extra_config`` and ``eviction_policy``. :func:`launch_extra_config` looks
for exactly that object (its ``eviction_policy`` must be the class being built) and
nothing else. A manager built by hand, with no spec above it, runs the policy's defaults.
No vLLM import here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from radix_evict.errors import ConfigProblem, PolicyConfigError
from radix_evict.suggest import did_you_mean
from radix_evict.vllm.names import CLASS_PREFIX, CONFIG_KEY, EVICTION_POLICY_KEY

MAX_FRAMES = 12  # policy __init__ <- manager __init__ <- spec.get_manager: 3 in 0.33.0
# radix-evict reads only CONFIG_KEY; another key that looks like ours is a typo.
OUR_KEY_PREFIXES = ("radix_", "radix-")


def launch_extra_config(class_name: str) -> Mapping[str, Any] | None:
    """The ``kv_connector_extra_config`` of the offloading spec building ``class_name``."""
    frame = sys._getframe(1)
    for _ in range(MAX_FRAMES):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        extra = getattr(owner, "extra_config", None)
        if isinstance(extra, Mapping) and getattr(owner, EVICTION_POLICY_KEY, None) == class_name:
            return extra
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _problem(policy: str, key: str | None, msg: str, type_: str = "value_error") -> ConfigProblem:
    return ConfigProblem(policy=policy, key=key, type=type_, msg=msg)


def radix_config(extra: Mapping[str, Any], policy: str) -> Any:
    """``radix_eviction_config`` from an extra config, as ``load_policy`` takes it (dict or JSON).

    Raises :class:`PolicyConfigError` for a key that looks like radix-evict's but is not
    (a typo would otherwise run the defaults silently), or a value that is not an object.
    """
    for key in extra:
        if isinstance(key, str) and key.startswith(OUR_KEY_PREFIXES) and key != CONFIG_KEY:
            hint = did_you_mean(key, [CONFIG_KEY]) or f"radix-evict reads only {CONFIG_KEY!r}"
            msg = f"kv_connector_extra_config key {key!r} is not radix-evict's; {hint}"
            raise PolicyConfigError(msg, policy=policy,
                                    problems=[_problem(policy, None, msg, "extra_forbidden")])
    value = extra.get(CONFIG_KEY)
    if value is not None and not isinstance(value, (str, Mapping)):
        msg = (f"kv_connector_extra_config.{CONFIG_KEY} must be a JSON object of policy "
               f"{policy!r}'s keys (or a JSON string of one), got {type(value).__name__}")
        raise PolicyConfigError(msg, policy=policy,
                                problems=[_problem(policy, None, msg, "config_type")])
    # A string is JSON: the registry parses it, with radix-evict's limits and messages.
    return dict(value) if isinstance(value, Mapping) else value


def wrong_class_hint(name: str, choices: list[str]) -> str:
    """For an ``eviction_policy`` this module cannot serve: what it probably meant."""
    named = ", ".join(CLASS_PREFIX + c for c in choices)
    if name in choices:
        guess = f"did you mean {CLASS_PREFIX + name!r}?"
    else:
        guess = did_you_mean(name, [CLASS_PREFIX + c for c in choices]) or ""
    hint = f"; {guess}" if guess else ""
    return (f"module 'radix_evict.vllm' serves {EVICTION_POLICY_KEY} values "
            f"{CLASS_PREFIX}<policy> ({named}){hint}")
