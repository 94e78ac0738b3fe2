"""Where an operator stands: what SGLang, here, would do with radix-evict's plugin and a setting.

Backs ``radix-evict sglang check``. Every answer comes from SGLang's own code where it
exists: its plugin metadata and allow-list rule, its argument choices after the plugin
ran, its strategy registry for the config error, its tree-core selection for which
core would run the policy, and its argument parser and server-argument hooks for the
HiCache (host tier) flags. Running the check registers the plugin in this process (as
SGLang's ``load_plugins()`` would); nothing else of SGLang's is started.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import logging
import os
from collections.abc import Collection, Iterator
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
class HiCacheVerdict:
    """What SGLang would do with the HiCache flags ``args``: its own parser and server-argument
    hooks give the verdict, the values it runs and (in its log) why it changed one; the
    host pool's size rule and the flags it ignores are :func:`host_pool` and
    :func:`unused_hicache_flags`, which ``radix-evict lint`` reports too."""

    args: list[str]
    enabled: bool = False
    ok: bool = False
    error: str | None = None  # the startup error SGLang would raise
    host_memory_mode: str | None = None
    write_policy: str | None = None  # the one SGLang runs (after its rewrites)
    write_policy_means: str | None = None
    io_backend: str | None = None
    mem_layout: str | None = None
    storage_backend: str | None = None
    host_size: str | None = None  # the host pool's size rule in effect
    rewrites: list[str] = field(default_factory=list)  # what SGLang changes, and why
    warnings: list[str] = field(default_factory=list)  # what it ignores or only warns about
    sglang_log: list[str] = field(default_factory=list)  # what its hooks logged


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
    hicache: HiCacheVerdict | None = None

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


def check(policy: str | None = None, config: dict[str, Any] | None = None,
          hicache: list[str] | None = None) -> CheckReport:
    """Inspect SGLang and the plugin here; with ``policy``, judge that setting too; with
    ``hicache`` (HiCache's arguments, as SGLang's command line takes them), those."""
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
    if hicache:
        report.hicache = judge_hicache(hicache)
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



# ------------------------------------------------------------------ HiCache (the host tier)
# What SGLang 0.5.23 does with HiCache's sizing flags beyond its server-argument hooks
# (paths in sglang/srt), stated once: ``judge_hicache`` reports it, and ``radix-evict lint``
# (radix_evict.lint.hicache, which also states the hooks' rules) places it in files.
HICACHE_ENABLE = "--enable-hierarchical-cache"
HICACHE_RATIO = "--hicache-ratio"
HICACHE_SIZE = "--hicache-size"
HICACHE_FRACTION = "--hicache-host-memory-fraction"
HICACHE_FLAGS = (  # HiCache's own flags, as SGLang's parser names them (and the alias)
    HICACHE_ENABLE, "--enable-hicache", "--hicache-host-memory-mode", HICACHE_RATIO,
    HICACHE_SIZE, HICACHE_FRACTION, "--hicache-write-policy", "--hicache-io-backend",
    "--hicache-mem-layout", "--hicache-storage-backend", "--hicache-storage-prefetch-policy",
    "--hicache-storage-backend-extra-config", "--hicache-storage-prefetch-retry-poll-interval",
    "--hicache-storage-prefetch-retry-max-attempts",
)
WRITE_POLICY_MEANS = {  # unified_radix_cache.py:558, unified_tree_core.py:1104 and :1788
    "write_through": "a node is copied to host memory when a request first inserts it, so the "
                     "device evicts a leaf by demoting it to the host tier",
    "write_through_selective": "a node is copied to host memory once requests have inserted it "
                               "twice (a reused prefix); a device leaf without a copy is dropped "
                               "when evicted",
    "write_back": "a node is copied to host memory only when the device evicts it",
}


@dataclass(frozen=True)
class HostPool:
    """How SGLang sizes HiCache's host pool (mem_cache/pool_host/base.py:219): the rule in
    effect, why building the pool fails at startup, what SGLang warns about it."""

    rule: str
    error: str | None = None
    warning: str | None = None


def host_pool(ratio: float | None, size: int, fraction: float | None, mode: str,
              decode: bool = False) -> HostPool:
    """The host pool's size for ``--hicache-ratio`` (None: not given), ``--hicache-size``,
    ``--hicache-host-memory-fraction`` and the host memory mode, on one rank."""
    import math

    if size > 0:  # pool_host/base.py:221; hicache_hook.py:123 turns auto-sizing off
        return HostPool(f"fixed: {size} GB (10^9 bytes) of host memory per rank "
                        f"({HICACHE_SIZE}); {HICACHE_RATIO} and the auto-sizing do not apply")
    if ratio is None:
        if decode:
            return HostPool("set by SGLang's decode server at startup (2.0 x the device pool, "
                            "or what its retraction backup needs)")
        default = 1.2 if mode == "buffer_only" else 2.0  # hicache_hook.py:119
        return HostPool(f"{default} x the device pool's tokens per rank (the {mode} mode's "
                        f"default {HICACHE_RATIO}), reduced at startup until all ranks' host "
                        f"pools fit in {fraction} of this machine's available host memory less "
                        f"a 10 GiB reserve ({HICACHE_FRACTION}; mem_cache/hicache_auto_size.py)")
    rule = f"{ratio} x the device pool's tokens per rank ({HICACHE_RATIO}); no auto-sizing"
    if not math.isfinite(ratio) or ratio < 0:
        what = "negative" if ratio < 0 else "not a whole number"
        return HostPool(rule, error=(
            f"{ratio} cannot size a host pool: SGLang does not check it, and building the host "
            f"pool fails at startup (its size, int(device tokens x ratio), is {what})"))
    if ratio < 1:
        return HostPool(rule, warning=(
            f"{ratio} makes the host pool smaller than the device pool: SGLang only warns "
            "(\"L2 cache effectiveness is reduced\", pool_host/base.py:237)" + (
                "; the host tier cannot hold a copy of every device node"
                if mode == "cache" else "")))
    return HostPool(rule)


def hicache_flags_used(enabled: bool, pd_mode: str, retraction_backup: str | None,
                       decode_offload: bool) -> bool:
    """Whether SGLang reads HiCache's flags: with HiCache on, and on a PD decode server that
    keeps a host pool for its retraction backup or its KV offload (hicache_hook.py:63)."""
    return enabled or decode_offload or (
        pd_mode == "decode" and retraction_backup in (None, "host_pool"))


def unused_hicache_flags(given: Collection[str], enabled: bool, size: int | None
                         ) -> list[tuple[str, str, str]]:
    """The HiCache flags a launch sets that SGLang does not use: (flag, kind, why).
    ``enabled``: SGLang reads HiCache's flags (:func:`hicache_flags_used`); ``size``:
    ``--hicache-size``'s value (None: filled in at deploy time)."""
    if not enabled:
        return [(f, "hicache_ignored", f"HiCache is off ({HICACHE_ENABLE} is not given), so "
                 "SGLang builds no host tier") for f in given
                if f in HICACHE_FLAGS and f not in (HICACHE_ENABLE, "--enable-hicache")]
    out = []
    fixed = size is not None and size > 0
    if fixed and HICACHE_RATIO in given:
        out.append((HICACHE_RATIO, "ratio_ignored", f"{HICACHE_SIZE} {size} sets the host "
                    "pool's size (pool_host/base.py:221)"))
    if size is not None and size < 0 and HICACHE_SIZE in given:
        out.append((HICACHE_SIZE, "size_ignored", "a size of 0 or less means no fixed size, so "
                    f"{HICACHE_RATIO} sizes the host pool"))
    if HICACHE_FRACTION in given and (HICACHE_RATIO in given or fixed):
        by = HICACHE_RATIO if HICACHE_RATIO in given else HICACHE_SIZE
        out.append((HICACHE_FRACTION, "fraction_ignored", f"it applies only when neither "
                    f"{HICACHE_RATIO} nor {HICACHE_SIZE} is set, and {by} is "
                    "(hicache_hook.py:123)"))
    return out


SERVER_ARGS_MODULE = "sglang.srt.server_args"
HICACHE_HOOK_MODULE = "sglang.srt.arg_groups.hicache_hook"
KV_CACHE_HOOK_MODULE = "sglang.srt.arg_groups.kv_cache_hook"
OVERRIDES_MODULE = "sglang.srt.arg_groups.overrides"


def judge_hicache(args: list[str]) -> HiCacheVerdict:
    """SGLang's verdict on HiCache's arguments: its parser, then its server-argument hooks in
    its pipeline's order (``handle_hicache_ratio_default``, ``handle_hicache``,
    ``handle_cache_compatibility``), the values it would run read back from its resolution,
    its own log lines on what it changed; then its host pool's size (:func:`host_pool`)."""
    import argparse
    import io

    verdict = HiCacheVerdict(args=list(args))
    server_args = importlib.import_module(SERVER_ARGS_MODULE)
    parser = argparse.ArgumentParser(prog="sglang serve")
    server_args.ServerArgs.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            raw = parser.parse_args(["--model-path", "model", *args])
    except SystemExit:
        lines = err.getvalue().strip().splitlines() or ["the argument parser refused them"]
        verdict.error = lines[-1].split(" error: ", 1)[-1]
        return verdict
    record = server_args.ServerArgs.from_cli_args(raw)
    hooks = importlib.import_module(HICACHE_HOOK_MODULE)
    kv_cache = importlib.import_module(KV_CACHE_HOOK_MODULE)
    try:
        with _sglang_log(verdict.sglang_log):
            hooks.handle_hicache_ratio_default(record)
            hooks.handle_hicache(record)
            kv_cache.handle_cache_compatibility(record)
    except Exception as e:  # SGLang's startup refusal: the answer
        verdict.error = f"{type(e).__name__}: {e}"
        return verdict
    resolution_result = importlib.import_module(OVERRIDES_MODULE).resolution_result

    def result(name: str) -> Any:
        return resolution_result(record, name)

    verdict.enabled = bool(result("enable_hierarchical_cache"))
    given = [a.partition("=")[0] for a in args if a.partition("=")[0] in HICACHE_FLAGS]
    size = raw.hicache_size
    used = hicache_flags_used(verdict.enabled, raw.disaggregation_mode,
                              raw.disaggregation_decode_retraction_backup,
                              raw.disaggregation_decode_enable_offload_kvcache)
    verdict.warnings = [f"SGLang ignores {flag}: {why}"
                        for flag, _, why in unused_hicache_flags(given, used, size)]
    if not verdict.enabled:
        verdict.ok = True
        return verdict
    verdict.host_memory_mode = result("hicache_host_memory_mode")
    verdict.write_policy = result("hicache_write_policy")
    verdict.write_policy_means = WRITE_POLICY_MEANS.get(verdict.write_policy or "")
    verdict.io_backend = result("hicache_io_backend")
    verdict.mem_layout = result("hicache_mem_layout")
    verdict.storage_backend = result("hicache_storage_backend")
    for name, flag in (("hicache_write_policy", "--hicache-write-policy"),
                       ("hicache_io_backend", "--hicache-io-backend"),
                       ("hicache_mem_layout", "--hicache-mem-layout")):
        asked = getattr(raw, name)
        if result(name) != asked:
            verdict.rewrites.append(f"{flag} {asked} -> {result(name)}")
    pool = host_pool(raw.hicache_ratio, size, raw.hicache_host_memory_fraction,
                     str(verdict.host_memory_mode), raw.disaggregation_mode == "decode")
    verdict.host_size = pool.rule
    if pool.warning:
        verdict.warnings.append(f"{HICACHE_RATIO}: {pool.warning}")
    if pool.error:
        verdict.error = f"{HICACHE_RATIO}: {pool.error}"
        return verdict
    verdict.ok = True
    return verdict


@contextlib.contextmanager
def _sglang_log(into: list[str]) -> Iterator[None]:
    """SGLang's log records while its hooks run, kept (not printed): its own words on what
    it changes."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            into.append(record.getMessage())

    logger = logging.getLogger("sglang")
    handler, was = Keep(logging.INFO), (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(was[0])
        logger.propagate = was[1]
