"""Where an operator stands: what SGLang, here, would do with radix-evict's plugin and a setting.

Backs ``radix-evict sglang check``. Every answer comes from SGLang's own code where it
exists: its plugin metadata and allow-list rule, its argument choices after the plugin
ran, its strategy registry for the config error, and its tree-core selection for which
core would run the policy. Running the check registers the plugin in this process (as
SGLang's ``load_plugins()`` would); nothing else of SGLang's is started.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from radix_evict.sglang import native


@dataclass
class SettingVerdict:
    """What SGLang would do with ``--radix-eviction-policy`` P and its config."""

    policy: str
    config: dict[str, Any] | None
    ok: bool = False
    error: str | None = None  # the startup error SGLang would raise
    problems: list[dict[str, Any]] = field(default_factory=list)
    strategy: str | None = None  # the strategy object SGLang would build
    tree_core: str | None = None  # the unified cache's core: "python" or "rust"
    tree_core_reason: str | None = None  # why the Python core, when that was not asked for


@dataclass
class CheckReport:
    sglang_version: str | None = None
    sglang_error: str | None = None  # why SGLang cannot be imported
    supported_version: str = native.SUPPORTED_VERSION
    entry_point: str | None = None  # "name = value (dist version)" when declared
    allow_list: list[str] | None = None  # SGLANG_PLUGINS (None: every plugin loads)
    plugin_allowed: bool = False
    plugin_active: bool = False  # registered in SGLang by this check
    plugin_error: str | None = None
    policy_package_failures: list[str] = field(default_factory=list)
    accepted_policies: list[str] = field(default_factory=list)
    added_policies: list[str] = field(default_factory=list)
    setting: SettingVerdict | None = None

    @property
    def version_supported(self) -> bool:
        return self.sglang_version == self.supported_version

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["version_supported"] = self.version_supported
        return data


def sglang_allow_list(environ: dict[str, str] | None = None) -> list[str] | None:
    """``SGLANG_PLUGINS`` as SGLang reads it: unset or empty allows every plugin."""
    raw = (environ if environ is not None else os.environ).get(native.PLUGIN_ALLOW_ENV, "")
    names = [x.strip() for x in raw.split(",") if x.strip()]
    return names or None


@dataclass(frozen=True)
class PluginPresence:
    """Whether SGLang here would run radix-evict's plugin: declared, and allowed."""

    entry_point: str | None  # "name = value (dist version)" when declared
    allow_list: list[str] | None  # SGLANG_PLUGINS (None: every plugin loads)

    @property
    def allowed(self) -> bool:
        return self.allow_list is None or native.ENTRY_POINT in self.allow_list

    @property
    def loads(self) -> bool:
        return self.entry_point is not None and self.allowed

    def why_not(self) -> str | None:
        """Why SGLang would not load the plugin, said plainly (None: it would)."""
        if self.entry_point is None:
            return (f"the installed radix-evict declares no {native.PLUGIN_GROUP!r} entry point "
                    f"{native.ENTRY_POINT!r}")
        if not self.allowed:
            assert self.allow_list is not None
            return (f"{native.PLUGIN_ALLOW_ENV}={','.join(self.allow_list)} leaves out "
                    f"radix-evict's plugin {native.ENTRY_POINT!r}")
        return None


def plugin_presence(environ: dict[str, str] | None = None) -> PluginPresence:
    """The plugin-presence check, written once: ``sglang check`` and ``lint`` both ask it."""
    return PluginPresence(_our_entry_point(), sglang_allow_list(environ))


def _our_entry_point() -> str | None:
    for ep in importlib.metadata.entry_points(group=native.PLUGIN_GROUP):
        if ep.name == native.ENTRY_POINT:
            dist = ep.dist
            where = f" ({dist.name} {dist.version})" if dist is not None else ""
            return f"{ep.name} = {ep.value}{where}"
    return None


def check(policy: str | None = None, config: dict[str, Any] | None = None) -> CheckReport:
    """Inspect SGLang and the plugin here; with ``policy``, judge that setting too."""
    report = CheckReport()
    try:
        importlib.import_module(native.CHOICES_MODULE)
        importlib.import_module("sglang.srt.plugins")
    except Exception as e:  # not installed, or broken: the answer, not a crash
        report.sglang_error = f"{type(e).__name__}: {e}"
        return report
    try:
        report.sglang_version = importlib.metadata.version(native.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        report.sglang_version = None
    presence = plugin_presence()
    report.entry_point = presence.entry_point
    report.allow_list = presence.allow_list
    report.plugin_allowed = presence.allowed
    if presence.loads:
        _activate(report)
    choices = importlib.import_module(native.CHOICES_MODULE)
    report.accepted_policies = list(choices.RADIX_EVICTION_POLICY_CHOICES)
    if policy is not None:
        report.setting = judge(policy, config, report.accepted_policies)
    return report


def _activate(report: CheckReport) -> None:
    from radix_evict.policies.registry import registry
    from radix_evict.sglang import plugin

    plugin.register()
    done = plugin.installed()
    report.policy_package_failures = [str(f) for f in registry.failures]
    if done is None:
        report.plugin_error = "the plugin failed to register (see the log above)"
        return
    report.plugin_active = True
    report.added_policies = list(done.added_policies)


def judge(policy: str, config: dict[str, Any] | None, accepted: list[str]) -> SettingVerdict:
    """The startup error SGLang would raise for this setting, or the core that would run it."""
    verdict = SettingVerdict(policy=policy, config=config)
    if policy not in accepted:
        quoted = ", ".join(repr(c) for c in accepted)
        verdict.error = (
            f"argument --radix-eviction-policy: invalid choice: {policy!r} (choose from {quoted})"
        )
        return verdict
    from radix_evict.errors import PolicyConfigError

    utils = importlib.import_module(native.STRATEGIES_MODULE)
    try:
        strategy = utils.get_eviction_strategy(policy, config)
    except PolicyConfigError as e:
        verdict.error = str(e)
        verdict.problems = [p.to_dict() for p in e.problems]
        return verdict
    except Exception as e:  # SGLang's own errors (a raw TypeError without the plugin)
        verdict.error = f"{type(e).__name__}: {e}"
        return verdict
    verdict.strategy = repr(strategy) if hasattr(strategy, "policy") else type(strategy).__name__
    verdict.tree_core, verdict.tree_core_reason = _tree_core(policy, config)
    if policy in native.NATIVE_CHOICES:  # SGLang's own policy: its own startup checks too
        _startup_checks(verdict, policy, config)
        if verdict.error is not None:
            return verdict
    verdict.ok = True
    return verdict


def _startup_checks(verdict: SettingVerdict, policy: str, config: Any) -> None:
    """What SGLang refuses at startup beyond building the strategy (tlru's server-argument
    check, the Rust core's C long): the verdict lint gives, from the same rules."""
    from radix_evict.errors import ConfigProblem, format_problems
    from radix_evict.sglang.startup import ERROR, startup_verdict

    refused = [r for r in startup_verdict(policy, config, rust_core=verdict.tree_core == "rust")
               if r.severity == ERROR]
    if not refused:
        return
    problems = [ConfigProblem(policy, ".".join(r.path) or None, r.type, r.msg, r.hint,
                              loc=r.path) for r in refused]
    verdict.error = format_problems(policy, problems)
    verdict.problems = [p.to_dict() for p in problems]


def _tree_core(policy: str, config: dict[str, Any] | None) -> tuple[str, str | None]:
    """SGLang's own selection for a unified cache with this policy (full KV only)."""
    from sglang.srt.mem_cache.cache_init_params import CacheInitParams
    from sglang.srt.mem_cache.unified_cache import tree_core_registry as reg
    from sglang.srt.mem_cache.unified_cache.component_type import ComponentType

    params = CacheInitParams(
        disable=False,
        req_to_token_pool=None,
        token_to_kv_pool_allocator=None,
        page_size=1,
        eviction_policy=policy,
        eviction_policy_config=config,
        tree_components=(ComponentType.FULL,),
    )
    asked = reg.envs.SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND.get()
    chosen = reg.select_tree_core_backend(params)
    reason = reg._rust_fallback_reason(params) if asked == "rust" and chosen != asked else None
    return chosen, reason
