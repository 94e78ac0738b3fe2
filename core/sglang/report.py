"""``radix-evict sglang check``'s report for people and its outcome, from a :class:`CheckReport`.

:func:`outcome` is ``ok`` (the plugin loads, the setting starts), ``invalid``
(it does not) or ``error`` (no SGLang here); :func:`report_lines` one fact a
line, problems said plainly. The command line prints them and maps the
outcome to an exit code, as ``lint`` does.
"""

from __future__ import annotations

import json

from radix_evict.sglang.check import CheckReport, HiCacheVerdict

OK, INVALID, ERROR = "ok", "invalid", "error"


def outcome(report: CheckReport) -> str:
    """``ok``, ``invalid`` or ``error`` (SGLang not importable)."""
    if report.sglang_error is not None:
        return ERROR
    if report.hicache is not None and not report.hicache.ok:
        return INVALID
    if report.setting is None and report.hicache is not None:
        return OK
    if report.setting is not None:
        return OK if report.setting.ok else INVALID
    return OK if report.plugin_active else INVALID


def hicache_args(enabled: bool, values: dict[str, str | None]) -> list[str]:
    """SGLang's argv for HiCache: ``--enable-hierarchical-cache`` and each ``--hicache-*``
    flag given, as ``FLAG=VALUE`` (written as given: SGLang's parser reads them)."""
    args = ["--enable-hierarchical-cache"] if enabled else []
    return args + [f"{flag}={value}" for flag, value in values.items() if value is not None]


def report_lines(r: CheckReport) -> list[str]:
    """The report for people: one fact per line, problems said plainly."""
    if r.sglang_error is not None:
        return [f"SGLang: not importable here ({r.sglang_error}); install sglang=="
                f"{r.supported_version} in this environment and run the check again"]
    version = r.sglang_version or "unknown version"
    note = "" if r.version_supported else (
        f" (radix-evict's plugin is written for {r.supported_version}; other versions may differ)")
    lines = [f"SGLang: {version}{note}"]
    if r.entry_point is None:
        lines.append("plugin: NOT declared (no entry point 'radix_evict' in group "
                     "sglang.srt.plugins; reinstall radix-evict in this environment)")
    else:
        lines.append(f"plugin: declared, {r.entry_point}")
    allow = "unset (every plugin loads)" if r.allow_list is None else ",".join(r.allow_list)
    verdict = "allowed" if r.plugin_allowed else "EXCLUDED: add radix_evict to SGLANG_PLUGINS"
    lines.append(f"SGLANG_PLUGINS: {allow} -> {verdict}")
    if r.plugin_error:
        lines.append(f"plugin: FAILED: {r.plugin_error}")
    elif r.plugin_active:
        added = ", ".join(r.added_policies) or "none"
        lines.append(f"plugin: registers; added policies: {added}; radix-evict validates every "
                     "policy's config")
    lines += [f"radix-evict policy package failed to load: {f}" for f in r.policy_package_failures]
    lines.append("--radix-eviction-policy accepts: " + ", ".join(r.accepted_policies))
    s = r.setting
    if s is not None:
        cfg = "" if s.config is None else f" {json.dumps(s.config)}"
        if s.ok:
            core = f"tree core: {s.tree_core}"
            if s.tree_core_reason:
                core += f" (fallback from rust: {s.tree_core_reason})"
            lines.append(f"setting {s.policy}{cfg}: OK, strategy {s.strategy}; {core}")
        else:
            lines.append(f"setting {s.policy}{cfg}: SGLang would refuse to start:")
            lines += ["  " + x for x in (s.error or "").splitlines()]
    if r.hicache is not None:
        lines += hicache_lines(r.hicache)
    return lines


def hicache_lines(h: HiCacheVerdict) -> list[str]:
    """What SGLang would do with the HiCache options, one fact per line."""
    if h.error is not None:
        return ["HiCache: SGLang would refuse to start:", f"  {h.error}"]
    if not h.enabled:
        lines = ["HiCache: off (no --enable-hierarchical-cache)"]
    else:
        storage = h.storage_backend or "none"
        lines = [f"HiCache: on, host memory mode {h.host_memory_mode}, storage backend {storage}",
                 f"HiCache write policy: {h.write_policy} ({h.write_policy_means})",
                 f"HiCache io backend: {h.io_backend}, host memory layout: {h.mem_layout}"]
        lines += [f"HiCache: SGLang rewrites {x}" for x in h.rewrites]
        lines += [f"  SGLang: {x}" for x in h.sglang_log if h.rewrites]
        lines.append(f"HiCache host pool: {h.host_size}")
    lines += [f"HiCache: warning: {w}" for w in h.warnings]
    return lines
