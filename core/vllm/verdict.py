"""vLLM 0.33.0's verdict on an offload policy setting, from its facts: no vLLM import.

The one statement of what building the CPU tier's cache policy decides, shared by
``radix-evict lint`` (which must judge a launch config anywhere) and ``radix-evict vllm
check`` (which asks vLLM's own code where it is installed, and takes its notes from here):

1. ``CachePolicyFactory.get_cache_policy_cls(eviction_policy, cache_policy_module_path)``:
   vLLM's own names (:data:`names.VLLM_POLICIES`) win; any other name needs a module
   path, which must import, and the name is looked up there. ``radix_evict.vllm`` serves
   ``radix_evict_<policy>`` for the policies on radix-evict's registry, nothing else;
2. a ``radix_evict_<policy>`` class validates ``radix_eviction_config`` when vLLM builds it
   (:func:`radix_evict.vllm.config.radix_config`, then the registry: radix-evict's strict
   messages). For any other class that key is ignored.

Another module's classes are not imported here (a linter runs no deployment's code): that
the module is found is all that is checked of it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import NAME_PROBLEMS, PolicyConfigError, ProblemType
from radix_evict.vllm import names
from radix_evict.vllm.config import radix_config, wrong_class_hint

ERROR, WARNING, NOTE = "error", "warning", "note"
# What a finding is about: a kv_connector_extra_config key (``path`` goes inside the config).
POLICY, MODULE, CONFIG = names.EVICTION_POLICY_KEY, names.MODULE_PATH_KEY, names.CONFIG_KEY


@dataclass(frozen=True)
class OffloadFinding:
    """One thing vLLM refuses (``error``) or does differently from what the setting says."""

    type: str
    msg: str
    about: str  # the kv_connector_extra_config key it is about
    path: tuple[str | int, ...] = ()  # inside radix_eviction_config
    hint: str | None = None
    severity: str = ERROR
    key: bool = False  # about the key at ``path`` itself, not its value


def module_missing(module_path: str) -> str | None:
    """Why ``module_path`` would not import here (None: it is found). Nothing is executed:
    each package level is found by the import system's finders, not imported."""
    if module_path in sys.modules:
        return None
    parts = module_path.split(".")
    search: Any = None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        if loaded is not None:
            search = getattr(loaded, "__path__", None)
        else:
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = find(name, search) if find is not None else None
                if spec is not None:
                    break
            if spec is None:
                return f"No module named {name!r}"
            search = spec.submodule_search_locations
        if search is None and i < len(parts) - 1:
            return f"No module named {module_path!r}; {name!r} is not a package"
    return None


def offload_verdict(policy: str | None, module_path: str | None, config: Any = None, *,
                    extra_keys: Iterable[str] = ()) -> list[OffloadFinding]:
    """What vLLM says when it builds ``policy`` (``eviction_policy``, None: vLLM's default)
    from ``module_path`` with radix-evict's ``config`` (``radix_eviction_config``, None:
    not given). ``extra_keys``: the extra config's other keys (a radix-evict typo is one).
    Empty, or no error: vLLM builds it."""
    from radix_evict.policies.registry import registry

    name = policy if policy is not None else names.DEFAULT_EVICTION_POLICY
    found: list[OffloadFinding] = []
    if name in names.VLLM_POLICIES:
        if module_path is not None:
            hint = None
            if module_path == names.MODULE_PATH and name in registry.choices(extended=True):
                hint = (f"for radix-evict's {name!r}, set {POLICY} to "
                        f"{names.class_name(name)!r}")
            found.append(OffloadFinding(
                "shadowed_policy", f"{name!r} is vLLM's own policy: it wins over "
                f"{module_path}.{name}", POLICY, hint=hint, severity=WARNING))
        return found + _ignored(name, config)
    if module_path is None:
        ours_module = f"{MODULE} {names.MODULE_PATH!r}"
        hint = None
        if names.policy_of(name) is not None:
            hint = f"radix-evict's classes need {ours_module}"
        elif name in registry.choices(extended=True):  # a bare radix-evict name
            hint = (f"for radix-evict's {name!r}, set {POLICY} to {names.class_name(name)!r} "
                    f"and {ours_module}")
        return [OffloadFinding(ProblemType.UNKNOWN_POLICY, names.unknown_policy_message(name),
                               POLICY, hint=hint)]
    if module_path != names.MODULE_PATH:
        why = module_missing(module_path)
        if why is not None:
            return [OffloadFinding("module_not_found", f"cache_policy_module_path "
                                   f"{module_path!r} does not import here: {why}", MODULE)]
        return _ignored(name, config)
    ours = names.policy_of(name)
    if ours is None:
        return [OffloadFinding(ProblemType.UNKNOWN_POLICY, f"module {names.MODULE_PATH!r} has "
                               f"no attribute {name!r}: "
                               + wrong_class_hint(name, registry.choices(extended=True)), POLICY)]
    named = [p for p in registry.validate(ours, None) if p.type in NAME_PROBLEMS]
    if named:
        return [OffloadFinding(p.type, p.msg, POLICY, hint=p.hint) for p in named[:1]]
    extra = {**dict.fromkeys(extra_keys), CONFIG: config}
    try:
        value = radix_config(extra, ours)
    except PolicyConfigError as e:
        return [OffloadFinding(p.type, p.msg, CONFIG if p.type == "config_type" else
                               _typo(extra_keys), hint=p.hint, key=p.type == "extra_forbidden")
                for p in e.problems]
    return [OffloadFinding(p.type, str(p), CONFIG, tuple(p.loc) or ((p.key,) if p.key else ()),
                           key=p.type == "extra_forbidden")
            for p in registry.validate(ours, value) if p.type not in NAME_PROBLEMS]


def _typo(keys: Iterable[str]) -> str:
    """The extra-config key that looks like radix-evict's and is not (radix_config refused)."""
    from radix_evict.vllm.config import OUR_KEY_PREFIXES

    return next((k for k in keys if isinstance(k, str) and k.startswith(OUR_KEY_PREFIXES)
                 and k != CONFIG), CONFIG)


def _ignored(name: str, config: Any) -> list[OffloadFinding]:
    if config is None:
        return []
    return [OffloadFinding("config_ignored", f"{CONFIG} is ignored: {name!r} is not one of "
                           "radix-evict's classes", CONFIG, severity=WARNING)]
