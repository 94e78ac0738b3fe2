"""``radix-evict vllm check``'s report for people and its outcome, from a
:class:`VllmCheckReport`: ``ok`` (vLLM would run it), ``invalid`` (it would fail) or
``error`` (no vLLM here). The command line prints them and maps the outcome to an exit code.
"""

from __future__ import annotations

import json

from radix_evict.vllm.check import VllmCheckReport

OK, INVALID, ERROR = "ok", "invalid", "error"


def outcome(report: VllmCheckReport) -> str:
    """``ok``, ``invalid`` or ``error`` (vLLM not importable)."""
    if report.vllm_error is not None:
        return ERROR
    return OK if report.ok else INVALID


def report_lines(r: VllmCheckReport) -> list[str]:
    """The report for people: one fact per line, problems said plainly."""
    if r.vllm_error is not None:
        return [f"vLLM: not importable here ({r.vllm_error}); install vllm=="
                f"{r.supported_version} in this environment and run the check again"]
    lines = [f"vLLM: {r.vllm_version or 'unknown version'}"]
    if r.kv_connector is not None:
        lines.append(f"kv_connector: {r.kv_connector}")
    lines.append("vLLM's own eviction_policy names (they win over any module's): "
                 + ", ".join(r.vllm_policies))
    lines.append("radix-evict's, with cache_policy_module_path radix_evict.vllm: "
                 + ", ".join(r.radix_evict_policies))
    cfg = "" if r.radix_eviction_config is None else (
        f", radix_eviction_config {json.dumps(r.radix_eviction_config)}")
    where = f" from {r.cache_policy_module_path}" if r.cache_policy_module_path else ""
    setting = f"eviction_policy {r.eviction_policy!r}{where}{cfg}"
    if r.ok:
        lines.append(f"{setting}: OK, runs {r.runs}")
        lines.append(f"  built by {r.built_with}")
    else:
        lines.append(f"{setting}: vLLM would fail to start:")
        lines += ["  " + x for x in (r.error or "").splitlines()]
    lines += [f"note: {n}" for n in r.notes]
    return lines
