"""What vLLM 0.33.0, here, would do with an offload config: backs ``radix-evict vllm check``.

Every answer comes from vLLM's own code where it exists: its version, its policy factory
(``CachePolicyFactory.get_cache_policy_cls``: which names are its own, the import of
``cache_policy_module_path``, the lookup of ``eviction_policy`` there) and its
``CPUOffloadingSpec.get_manager``, which builds the policy; for a ``radix_evict_<policy>``
class that is where radix-evict validates ``radix_eviction_config``. Its notes (what vLLM
does differently from what the setting seems to say) are :mod:`radix_evict.vllm.verdict`'s,
the verdict ``radix-evict lint`` gives from vLLM's facts. Nothing else of vLLM's
is started, and no memory is reserved (the tier is sized to 0 chunks): the tier's size,
``cpu_bytes_to_use``, is judged by :mod:`radix_evict.vllm.tier`, vLLM's conversion of it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import asdict, dataclass, field
from typing import Any

from radix_evict.vllm import names
from radix_evict.vllm.tier import SIZE_KEY, tier_size_problem
from radix_evict.vllm.verdict import ERROR, offload_verdict


@dataclass
class VllmCheckReport:
    vllm_version: str | None = None
    vllm_error: str | None = None  # why vLLM's offload modules cannot be imported
    supported_version: str = names.SUPPORTED_VERSION
    kv_connector: str | None = None  # from --kv-transfer-config, when given
    eviction_policy: str = names.DEFAULT_EVICTION_POLICY
    cache_policy_module_path: str | None = None
    radix_eviction_config: Any = None
    vllm_policies: list[str] = field(default_factory=list)  # vLLM's own names (they win)
    radix_evict_policies: list[str] = field(default_factory=list)  # radix_evict_<policy>
    ok: bool = False
    error: str | None = None  # the startup error vLLM would raise
    problems: list[dict[str, Any]] = field(default_factory=list)
    runs: str | None = None  # what would run: the class, and for radix-evict the policy
    built_with: str | None = None  # how the check built it (vLLM's spec, or its manager)
    notes: list[str] = field(default_factory=list)

    @property
    def version_supported(self) -> bool:
        return self.vllm_version == self.supported_version

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["version_supported"] = self.version_supported
        return data


def effective_extra(kv_transfer_config: dict[str, Any] | None,
                    overrides: dict[str, Any]) -> dict[str, Any]:
    """The connector's extra config, with the keys given on their own laid over it."""
    extra: dict[str, Any] = {}
    if kv_transfer_config is not None:
        given = kv_transfer_config.get("kv_connector_extra_config") or {}
        if not isinstance(given, dict):
            raise ValueError("kv_connector_extra_config must be a JSON object, got "
                             f"{type(given).__name__}")
        extra.update(given)
    extra.update({k: v for k, v in overrides.items() if v is not None})
    return extra


def check(kv_transfer_config: dict[str, Any] | None = None, *,
          eviction_policy: str | None = None, cache_policy_module_path: str | None = None,
          radix_eviction_config: Any = None) -> VllmCheckReport:
    """Judge an offload config (a ``--kv-transfer-config`` object and/or its keys)."""
    report = VllmCheckReport()
    try:
        factory = importlib.import_module(names.FACTORY_MODULE).CachePolicyFactory
        importlib.import_module(names.MANAGER_MODULE)
    except Exception as e:  # not installed, or broken: the answer, not a crash
        report.vllm_error = f"{type(e).__name__}: {e}"
        return report
    try:
        report.vllm_version = importlib.metadata.version(names.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        report.vllm_version = None
    if not report.version_supported:
        report.notes.append(f"radix-evict's adapter is written for vLLM "
                            f"{names.SUPPORTED_VERSION}; other versions may differ")
    from radix_evict.policies.registry import registry

    report.vllm_policies = list(factory._registry)
    report.radix_evict_policies = [names.class_name(c) for c in registry.choices()]
    extra = effective_extra(kv_transfer_config, {
        names.EVICTION_POLICY_KEY: eviction_policy,
        names.MODULE_PATH_KEY: cache_policy_module_path,
        names.CONFIG_KEY: radix_eviction_config,
    })
    report.eviction_policy = str(extra.get(names.EVICTION_POLICY_KEY,
                                           names.DEFAULT_EVICTION_POLICY))
    report.cache_policy_module_path = extra.get(names.MODULE_PATH_KEY)
    report.radix_eviction_config = extra.get(names.CONFIG_KEY)
    if kv_transfer_config is not None:
        report.kv_connector = kv_transfer_config.get("kv_connector")
        if report.kv_connector != names.CONNECTOR:
            report.error = (f"kv_connector is {report.kv_connector!r}: only "
                            f"{names.CONNECTOR!r} has the CPU offload tier that reads "
                            f"{names.EVICTION_POLICY_KEY}; this config runs no cache policy")
            return report
        report.error = tier_size_problem(extra.get(SIZE_KEY))
        if report.error is not None:  # vLLM's CPUOffloadingSpec sizes the tier first
            return report
    else:
        extra.setdefault(SIZE_KEY, 1)  # keys given alone: the size is not asked
    _judge(report, factory, extra)
    return report


def _judge(report: VllmCheckReport, factory: Any, extra: dict[str, Any]) -> None:
    from radix_evict.errors import PolicyConfigError

    name, module = report.eviction_policy, report.cache_policy_module_path
    verdict = offload_verdict(name, module, report.radix_eviction_config)  # lint's, too
    try:
        cls = factory.get_cache_policy_cls(name, module)
    except AssertionError:
        report.error = (f"{module}.{name} is not a subclass of vLLM's CachePolicy "
                        "(CachePolicyFactory asserts it)")
        return
    except PolicyConfigError as e:
        report.error, report.problems = str(e), [p.to_dict() for p in e.problems]
        return
    except ImportError as e:
        report.error = (f"cache_policy_module_path {module!r} does not import here: "
                        f"{type(e).__name__}: {e}")
        return
    except Exception as e:  # vLLM's unknown name, a missing class
        report.error = f"{type(e).__name__}: {e}"
        if module is None and names.policy_of(name) is not None:
            report.notes += [f.hint for f in verdict if f.hint]
        return
    ours = getattr(cls, "radix_evict_policy", None)
    for f in verdict:  # what vLLM does differently from what the setting seems to say
        if f.severity != ERROR:
            report.notes += [f.msg, *([f.hint] if f.hint else [])]
    try:
        manager, report.built_with = _build(extra)
    except PolicyConfigError as e:
        report.error, report.problems = str(e), [p.to_dict() for p in e.problems]
        return
    except Exception as e:
        report.error = f"{type(e).__name__}: {e}"
        return
    built = manager._policy
    if ours is not None:
        tree = built.tree
        config = tree.policy.config.model_dump()
        report.runs = (f"{cls.__name__}: radix-evict's policy {ours!r} from "
                       f"{registry_source(ours)} with config {config}")
    else:
        report.runs = f"{type(built).__module__}.{type(built).__qualname__}"
    report.ok = True


def registry_source(policy: str) -> str:
    from radix_evict.policies.registry import registry

    return registry.get(policy).source


class _ManagerBuilder:
    """Stands where vLLM's spec stands when the spec module cannot be imported here."""

    def __init__(self, extra: dict[str, Any]) -> None:
        self.extra_config = extra
        self.eviction_policy = extra.get(names.EVICTION_POLICY_KEY,
                                         names.DEFAULT_EVICTION_POLICY)

    def get_manager(self) -> Any:
        manager_cls = importlib.import_module(names.MANAGER_MODULE).CPUOffloadingManager
        return manager_cls(num_chunks=0, cache_policy=self.eviction_policy,
                           cache_policy_module_path=self.extra_config.get(names.MODULE_PATH_KEY))


def _build(extra: dict[str, Any]) -> tuple[Any, str]:
    from radix_evict.vllm.launch import build_manager

    try:
        importlib.import_module(names.SPEC_MODULE)
    except Exception as e:
        how = (f"CPUOffloadingManager (vLLM's CPUOffloadingSpec does not import here: "
               f"{type(e).__name__}: {e})")
        return _ManagerBuilder(extra).get_manager(), how
    return build_manager(extra), "CPUOffloadingSpec.get_manager (as vLLM builds it)"
