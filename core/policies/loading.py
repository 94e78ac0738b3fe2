"""Loading the registry's state: every plugin's hooks called once, checked and merged.

:func:`load_state` finds the entry points of one group (radix-evict's own
``builtin`` first), loads those ``RADIX_EVICT_PLUGINS`` allows, checks each
registration (:func:`check_spec`: a valid name, an ``EvictionPolicy`` with a
``score()``, a strict config model) and merges them: a name registered twice
is a :class:`NameConflict` (the first kept), a third-party plugin that takes a
built-in's name fails as a whole, and a choice-list extension nobody
registered is a :class:`ChoiceProblem`. The registry keeps the result.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from radix_evict.errors import PolicyRegistrationError
from radix_evict.policies.contract import EvictionPolicy
from radix_evict.policies.plugins import (
    ENV_VAR,
    LoadedPlugin,
    PluginFailure,
    PluginSource,
    allow_list,
    load_plugin,
    plugin_failure,
    select_plugins,
    watch_interrupts,
)
from radix_evict.policies.spec import PolicySpec
from radix_evict.policies.strictness import config_model_problems

__all__ = ["NAME_RE", "ChoiceProblem", "LoadState", "NameConflict", "check_spec", "load_state"]

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


@dataclass(frozen=True)
class NameConflict:
    """A name registered twice: the first registration is kept, the second refused."""

    name: str
    first: PolicySpec
    second: PolicySpec

    def __str__(self) -> str:
        return (
            f"policy {self.name!r} is registered twice: by {self.first.source} (kept) and by "
            f"{self.second.source} (refused); uninstall one of them, or leave the "
            f"second out of {ENV_VAR}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "first": {"distribution": self.first.distribution, "version": self.first.version,
                      "entry_point": self.first.entry_point},
            "second": {"distribution": self.second.distribution, "version": self.second.version,
                       "entry_point": self.second.entry_point},
        }


@dataclass(frozen=True)
class ChoiceProblem:
    """A plugin extended the choice list with a name nobody registered."""

    name: str
    distribution: str
    entry_point: str

    def __str__(self) -> str:
        return (
            f"{self.distribution} (entry point {self.entry_point!r}) added {self.name!r} to the "
            "choice list, but no plugin registered that policy"
        )


@dataclass
class LoadState:
    """One load's outcome; built once, then only read."""

    specs: dict[str, PolicySpec] = field(default_factory=dict)
    choices: list[str] = field(default_factory=list)
    own_choices: list[str] = field(default_factory=list)
    plugins: list[LoadedPlugin] = field(default_factory=list)
    skipped: list[PluginSource] = field(default_factory=list)
    failures: list[PluginFailure] = field(default_factory=list)
    conflicts: list[NameConflict] = field(default_factory=list)
    choice_problems: list[ChoiceProblem] = field(default_factory=list)
    unmatched_allow: list[str] = field(default_factory=list)
    allowed: frozenset[str] | None = None
    installed: list[PluginSource] = field(default_factory=list)  # third-party entry points


def _without_builtin_names(
    result: LoadedPlugin, builtins: Mapping[str, PolicySpec]
) -> LoadedPlugin | PluginFailure:
    """A third-party plugin that registers a built-in's name fails as a whole.

    Keeping the built-in and merely recording a conflict would make the
    built-in unusable for everyone who installed the package; refusing the
    package leaves the built-in working and puts the blame where it belongs.
    """
    taken = [s.name for s in result.specs if s.name in builtins]
    if not taken:
        return result
    owner = builtins[taken[0]]
    names = ", ".join(repr(n) for n in taken)
    error = PolicyRegistrationError(
        f"registers {names}, already a built-in policy of {owner.source}; a plugin cannot "
        "replace a built-in: register it under another name"
    )
    return plugin_failure(result.source, "register", error, result.specs)


def check_spec(spec: Any, src: PluginSource) -> PolicySpec:
    """Validate a registration and stamp its source; raising fails only that plugin."""
    if not isinstance(spec, PolicySpec):
        raise PolicyRegistrationError(
            f"register() takes a radix_evict.PolicySpec, got {type(spec).__name__}"
        )
    name = spec.name
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PolicyRegistrationError(
            f"policy name {name!r} is invalid: use 1-64 lowercase letters, digits, '_' or '-'"
        )
    kind: Any = spec.policy
    if not (isinstance(kind, type) and issubclass(kind, EvictionPolicy)):
        raise PolicyRegistrationError(
            f"policy {name!r}: {kind!r} is not a subclass of radix_evict.EvictionPolicy"
        )
    if spec.derive_config is not None and not callable(spec.derive_config):
        raise PolicyRegistrationError(
            f"policy {name!r}: derive_config must be a function of the workload's stats, "
            f"got {spec.derive_config!r}"
        )
    if getattr(kind, "score", None) is EvictionPolicy.score:
        raise PolicyRegistrationError(f"policy {name!r}: {kind.__name__} does not define score()")
    problems = config_model_problems(spec.config_model)
    if problems:
        raise PolicyRegistrationError(
            f"policy {name!r}: config model is not strict enough: " + "; ".join(problems)
        )
    return dataclasses.replace(
        spec, distribution=src.distribution, version=src.version, entry_point=src.entry_point
    )


def load_state(
    find: Callable[[str], list[PluginSource]],
    group: str,
    environ: Mapping[str, str] | None,
    extra: list[PluginSource],
) -> LoadState:
    """Find, filter and load every plugin of ``group``; what they registered, and what failed."""
    st = LoadState()
    st.allowed = allowed = allow_list(environ)
    found = find(group)
    st.installed = [s for s in found if not s.builtin]
    to_load, st.skipped = select_plugins(found, allowed)
    if allowed is not None:
        names = {s.entry_point for s in st.installed}
        st.unmatched_allow = sorted(allowed - names)
    base: list[str] = []
    builtins: dict[str, PolicySpec] = {}
    extensions: list[tuple[PluginSource, str]] = []
    with watch_interrupts() as watch:
        loaded = [(src, load_plugin(src, check_spec, watch))
                  for src in [*to_load, *extra]]
    for src, result in loaded:
        if isinstance(result, LoadedPlugin) and not src.builtin:
            result = _without_builtin_names(result, builtins)
        if isinstance(result, PluginFailure):
            st.failures.append(result)
            continue
        st.plugins.append(result)
        for spec in result.specs:
            first = st.specs.get(spec.name)
            if first is not None:
                st.conflicts.append(NameConflict(spec.name, first, spec))
                continue
            st.specs[spec.name] = spec
            if src.builtin:
                builtins[spec.name] = spec
                if not spec.hidden:
                    base.append(spec.name)
        extensions.extend((src, n) for n in result.choices)
    st.own_choices = list(base)
    choices = list(base)
    for src, n in extensions:
        if n not in st.specs:
            st.choice_problems.append(ChoiceProblem(n, src.distribution, src.entry_point))
        elif n not in choices:
            choices.append(n)
    st.choices = choices
    return st
