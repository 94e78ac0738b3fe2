"""What the registry says when a name cannot be used: unknown, hidden, broken or ambiguous.

Each error carries one :class:`~radix_evict.errors.ConfigProblem` with a stable
type (``radix_evict.errors.ProblemType``). An unknown name blames a plugin that
failed to load only if that plugin could have provided it (exit 2 in the CLI);
otherwise the name is simply unknown (exit 1), with a "did you mean" and notes
on what failed or ``RADIX_EVICT_PLUGINS`` left out, since one may be the cause.
"""

from __future__ import annotations

from typing import Any

from radix_evict.errors import (
    ConfigProblem,
    PluginLoadError,
    PolicyConfigError,
    PolicyConflictError,
    ProblemType,
)
from radix_evict.policies.loading import LoadState
from radix_evict.policies.plugins import ENV_VAR, PluginFailure, PluginSource, normalize_dist_name
from radix_evict.policies.spec import PolicySpec
from radix_evict.suggest import did_you_mean

__all__ = ["EXTEND_HOW", "allow_list_notes", "conflict_error", "hidden_error", "unknown_error"]

EXTEND_HOW = (
    "to offer it, install (or write) a package whose radix_evict_extend_choices hook "
    "extends the choice list with it (plugins_example/ shows how; it adds 'fifo')"
)


def unknown_error(st: LoadState, name: Any, offered: list[str]) -> PolicyConfigError:
    """Unknown name: a plugin failure only if that plugin could have provided it.

    A failed plugin is blamed when it registered the name before failing, or
    its entry point or distribution is named after it.
    """
    shown = repr(name)
    near = did_you_mean(name, offered) if isinstance(name, str) else None
    lines = [f"unknown policy {shown}; choices: {', '.join(offered) or '(none)'}"]
    if near:
        lines[0] += f"; {near}"
    culprits = [f for f in st.failures if _may_provide(f, name)]
    problem_type = ProblemType.UNKNOWN_POLICY
    cls: type[PolicyConfigError] = PolicyConfigError
    if culprits:
        exact = any(name in f.policies for f in culprits)
        cls, problem_type = PluginLoadError, ProblemType.PLUGIN_FAILED
        verb = "comes from" if exact else "probably comes from"
        lines = [f"policy {shown} is not available: it {verb} a plugin that failed to load"]
        lines += [f"  - {f}" for f in culprits]
        if not exact:
            lines.append(f"  (registered policies: {', '.join(offered) or '(none)'})")
    else:
        if st.failures:
            lines.append("note: plugins that failed to load: "
                         + "; ".join(map(str, st.failures)))
        lines += [f"note: {n}" for n in allow_list_notes(st)]
        lines += [f"note: {c}" for c in st.choice_problems if c.name == name]
    message = "\n".join(lines)
    problem = ConfigProblem(
        policy=str(name),
        key=None,
        type=problem_type,
        msg=message,
        hint=near,
        valid_keys=(),
    )
    return cls(message, policy=str(name), problems=[problem])


def conflict_error(st: LoadState, name: str) -> PolicyConflictError | None:
    """The error for a name two distributions registered (None: it is not ambiguous)."""
    found = [c for c in st.conflicts if c.name == name]
    if not found:
        return None
    message = "\n".join(str(c) for c in found)
    problem = ConfigProblem(policy=name, key=None, type=ProblemType.NAME_CONFLICT, msg=message)
    return PolicyConflictError(message, policy=name, problems=[problem])


def hidden_error(name: str, spec: PolicySpec, offered: list[str]) -> PolicyConfigError:
    """A registered name that is not a ``--policy`` choice: says it exists and how to offer it."""
    what = "hidden" if spec.hidden else "not in the choice list"
    message = (
        f"policy {name!r} exists (registered by {spec.source}) but is {what}: the --policy "
        f"choices are {', '.join(offered)}; {EXTEND_HOW}"
    )
    problem = ConfigProblem(
        policy=name, key=None, type=ProblemType.HIDDEN_POLICY, msg=message, hint=EXTEND_HOW
    )
    return PolicyConfigError(message, policy=name, problems=[problem])


def _may_provide(failure: PluginFailure, name: Any) -> bool:
    """Whether a failed plugin registered ``name``, or is named after it (entry point, dist)."""
    if not isinstance(name, str):
        return False
    if name in failure.policies or failure.entry_point == name:
        return True
    return name in normalize_dist_name(failure.distribution).split("-")


def allow_list_notes(st: LoadState) -> list[str]:
    """Why installed plugins did not load: RADIX_EVICT_PLUGINS left them out or names nothing."""
    if st.allowed is None:
        return []
    shown = ",".join(sorted(st.allowed))
    out: list[str] = []
    by_dist: dict[str, list[PluginSource]] = {}
    for src in st.installed:
        by_dist.setdefault(normalize_dist_name(src.distribution), []).append(src)
    for unmatched in st.unmatched_allow:
        dist_eps = by_dist.get(normalize_dist_name(unmatched))
        if dist_eps:
            eps = ", ".join(repr(s.entry_point) for s in dist_eps)
            out.append(f"{ENV_VAR} names {unmatched!r}, a distribution; it takes entry point "
                       f"names: use {eps} (what {unmatched} declares)")
        else:
            installed = ", ".join(f"{s.entry_point!r} ({s.distribution})" for s in st.installed)
            out.append(f"{ENV_VAR} names {unmatched!r}, which matches no installed entry point "
                       f"(installed: {installed or 'none'})")
    if st.skipped:
        skipped = ", ".join(s.label for s in st.skipped)
        kept = st.allowed - set(st.unmatched_allow)
        eps = ",".join(sorted({*kept, *(s.entry_point for s in st.skipped)}))
        out.append(f"{ENV_VAR}={shown!r} leaves out {len(st.skipped)} installed plugin(s): "
                   f"{skipped}; to load them, set {ENV_VAR}={eps}")
    return out
