"""The policy registry: every policy any plugin registered, the choice list, and strict configs.

Nothing loads at import: the first question asked of :data:`registry` finds
the entry points of group ``radix_evict.policies`` (radix-evict's own
``builtin`` first), calls each plugin's hooks separately and caches the
result for the process (:meth:`Registry.reload` drops it).

Two lists of names matter. :meth:`Registry.choices` is what the CLI offers
for ``--policy`` (SGLang's five public names, then names that plugins added
through ``radix_evict_extend_choices``); ``choices(extended=True)`` is every
registered name. The library API (:meth:`Registry.load_policy`,
``RadixCache(policy=...)``) accepts every registered name, as SGLang's
strategy factory does; :meth:`Registry.check_choice` is the CLI's gate.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from radix_evict.errors import (
    ConfigProblem,
    PluginLoadError,
    PolicyConfigError,
    PolicyConflictError,
    PolicyRegistrationError,
)
from radix_evict.policies.config import (
    ConfigInput,
    ConfigKey,
    config_model_problems,
    describe_model,
    validate_config,
)
from radix_evict.policies import resolve
from radix_evict.policies.contract import EvictionPolicy, PolicyConfig
from radix_evict.policies.plugins import (
    ENV_VAR,
    GROUP,
    IN_PROCESS,
    LoadedPlugin,
    PluginFailure,
    PluginSource,
    allow_list,
    find_plugins,
    in_process_source,
    load_plugin,
    normalize_dist_name,
    plugin_failure,
    select_plugins,
    watch_interrupts,
)
from radix_evict.policies.spec import PolicySpec
from radix_evict.suggest import did_you_mean

__all__ = [
    "ChoiceProblem",
    "ConfigKey",
    "ConfigProblem",
    "NameConflict",
    "PluginFailure",
    "PluginSource",
    "PolicySpec",
    "Registry",
    "load_policy",
    "normalize_dist_name",
    "registry",
]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
EXTEND_HOW = (
    "to offer it, install (or write) a package whose radix_evict_extend_choices hook "
    "extends the choice list with it (plugins_example/ shows how; it adds 'fifo')"
)


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
class _State:
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


def _check_spec(spec: Any, src: PluginSource) -> PolicySpec:
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


class Registry:
    """Registered policies, the choice list, plugin failures and name conflicts.

    ``find`` and ``environ`` exist so tests can build an isolated registry;
    the process-wide one is :data:`registry`.
    """

    def __init__(
        self,
        *,
        group: str = GROUP,
        find: Callable[[str], list[PluginSource]] = find_plugins,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.group = group
        self._find = find
        self._environ = environ
        self._extra: list[PluginSource] = []
        self._state: _State | None = None
        self._lock = threading.RLock()
        self._loading = False

    # ------------------------------------------------------------------ loading
    @property
    def loaded(self) -> bool:
        """Whether plugins have been loaded in this process (never at import)."""
        return self._state is not None

    def reload(self) -> None:
        """Forget the loaded plugins; the next question loads them again (re-reading the env)."""
        with self._lock:
            self._state = None

    def add_plugin(
        self, plugin: Any, *, name: str, distribution: str = IN_PROCESS, version: str | None = None
    ) -> None:
        """Register a plugin object (a module or class with hook implementations) in-process.

        It loads after every entry point, like a third-party package, and is
        not subject to ``RADIX_EVICT_PLUGINS``. For tests and embedding code.
        """
        with self._lock:
            self._extra = [s for s in self._extra if s.entry_point != name]
            self._extra.append(in_process_source(plugin, name=name, distribution=distribution,
                                                 version=version))
            self._state = None

    def remove_plugin(self, name: str) -> None:
        """Undo :meth:`add_plugin`."""
        with self._lock:
            self._extra = [s for s in self._extra if s.entry_point != name]
            self._state = None

    def _ensure(self) -> _State:
        state = self._state
        if state is not None:
            return state
        with self._lock:
            if self._state is None:
                if self._loading:
                    raise RuntimeError("the policy registry was used while plugins were loading")
                self._loading = True
                try:
                    self._state = self._build()
                finally:
                    self._loading = False
            return self._state

    def _build(self) -> _State:
        st = _State()
        st.allowed = allowed = allow_list(self._environ)
        found = self._find(self.group)
        st.installed = [s for s in found if not s.builtin]
        to_load, st.skipped = select_plugins(found, allowed)
        if allowed is not None:
            names = {s.entry_point for s in st.installed}
            st.unmatched_allow = sorted(allowed - names)
        base: list[str] = []
        builtins: dict[str, PolicySpec] = {}
        extensions: list[tuple[PluginSource, str]] = []
        with watch_interrupts() as watch:
            loaded = [(src, load_plugin(src, _check_spec, watch))
                      for src in [*to_load, *self._extra]]
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

    # ------------------------------------------------------------------ what loaded
    @property
    def failures(self) -> list[PluginFailure]:
        """Plugins that failed to import or raised in a hook, with distribution and entry point."""
        return list(self._ensure().failures)

    @property
    def conflicts(self) -> list[NameConflict]:
        """Names registered twice (the first registration is kept)."""
        return list(self._ensure().conflicts)

    @property
    def plugins(self) -> list[LoadedPlugin]:
        """Plugins that loaded, in load order, with what each contributed."""
        return list(self._ensure().plugins)

    @property
    def skipped(self) -> list[PluginSource]:
        """Third-party plugins left out by ``RADIX_EVICT_PLUGINS``."""
        return list(self._ensure().skipped)

    @property
    def choice_problems(self) -> list[ChoiceProblem]:
        """Choice-list extensions naming a policy that nobody registered."""
        return list(self._ensure().choice_problems)

    @property
    def unmatched_allow(self) -> list[str]:
        """Names in ``RADIX_EVICT_PLUGINS`` that match no installed entry point."""
        return list(self._ensure().unmatched_allow)

    def specs(self) -> list[PolicySpec]:
        """Every registered policy, in registration order."""
        return list(self._ensure().specs.values())

    def __contains__(self, name: object) -> bool:
        return name in self._ensure().specs

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._ensure().specs))

    def choices(self, extended: bool = False) -> list[str]:
        """The ``--policy`` choices; ``extended=True``: every registered name (choices first)."""
        st = self._ensure()
        if not extended:
            return list(st.choices)
        return [*st.choices, *(n for n in st.specs if n not in st.choices)]

    def own_choices(self) -> list[str]:
        """radix-evict's own public policies: the choice list before plugins extended it.

        What ``simulate`` runs when no ``--policy`` is given (an extension runs
        when asked for).
        """
        return list(self._ensure().own_choices)

    # ------------------------------------------------------------------ lookup
    def get(self, name: str) -> PolicySpec:
        """The spec registered under ``name`` (the first one, if two packages registered it).

        Raises :class:`PolicyConfigError` for an unknown name, or
        :class:`~radix_evict.errors.PluginLoadError` when a plugin that failed
        to load would have provided it.
        """
        spec = self._ensure().specs.get(name) if isinstance(name, str) else None
        if spec is None:
            raise self._unknown(name, self.choices(extended=True))
        return spec

    def notes(self, *, failures: bool = True) -> list[str]:
        """What went wrong or was left out while loading, one line each (``list`` prints them).

        Plugins that failed (unless ``failures=False``), plugins
        ``RADIX_EVICT_PLUGINS`` skipped (with the entry point name to put
        there), allow-list names matching no entry point (a distribution name
        given instead is recognised), and choice-list names nobody registered.
        """
        st = self._ensure()
        out = [f"plugin {f}" for f in st.failures] if failures else []
        out += _allow_list_notes(st)
        out += [str(c) for c in st.choice_problems]
        return out

    def _unknown(self, name: Any, offered: list[str]) -> PolicyConfigError:
        """Unknown name: a plugin failure only if that plugin could have provided it.

        A failed plugin is blamed (exit 2 in the CLI) when it registered the
        name before failing, or its entry point or distribution is named
        after it; otherwise the name is simply unknown (exit 1), with notes
        on what failed or was left out, since one of those may be the cause.
        """
        st = self._ensure()
        shown = repr(name)
        near = did_you_mean(name, offered) if isinstance(name, str) else None
        lines = [f"unknown policy {shown}; choices: {', '.join(offered) or '(none)'}"]
        if near:
            lines[0] += f"; {near}"
        culprits = [f for f in st.failures if _may_provide(f, name)]
        problem_type = "unknown_policy"
        cls: type[PolicyConfigError] = PolicyConfigError
        if culprits:
            exact = any(name in f.policies for f in culprits)
            cls, problem_type = PluginLoadError, "plugin_failed"
            verb = "comes from" if exact else "probably comes from"
            lines = [f"policy {shown} is not available: it {verb} a plugin that failed to load"]
            lines += [f"  - {f}" for f in culprits]
            if not exact:
                lines.append(f"  (registered policies: {', '.join(offered) or '(none)'})")
        else:
            if st.failures:
                lines.append("note: plugins that failed to load: "
                             + "; ".join(map(str, st.failures)))
            lines += [f"note: {n}" for n in _allow_list_notes(st)]
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

    def _conflict_error(self, name: str) -> PolicyConflictError | None:
        found = [c for c in self._ensure().conflicts if c.name == name]
        if not found:
            return None
        message = "\n".join(str(c) for c in found)
        problem = ConfigProblem(policy=name, key=None, type="name_conflict", msg=message)
        return PolicyConflictError(message, policy=name, problems=[problem])

    def _resolve(self, name: str) -> PolicySpec:
        spec = self.get(name)
        conflict = self._conflict_error(name)
        if conflict is not None:
            raise conflict
        return spec

    def check_choice(self, name: str, extended: bool = False) -> PolicySpec:
        """The CLI's gate: ``name`` must be a ``--policy`` choice (any registered name if extended).

        A registered but hidden name fails with a message that says it exists,
        is hidden, and how to extend the choice list; an unknown name lists the
        choices and suggests the nearest.
        """
        offered = self.choices(extended=extended)
        if name in offered:
            return self._resolve(name)
        st = self._ensure()
        spec = st.specs.get(name) if isinstance(name, str) else None
        if spec is None:
            raise self._unknown(name, offered)
        what = "hidden" if spec.hidden else "not in the choice list"
        message = (
            f"policy {name!r} exists (registered by {spec.source}) but is {what}: the --policy "
            f"choices are {', '.join(offered)}; {EXTEND_HOW}"
        )
        problem = ConfigProblem(
            policy=name, key=None, type="hidden_policy", msg=message, hint=EXTEND_HOW
        )
        raise PolicyConfigError(message, policy=name, problems=[problem])

    # ------------------------------------------------------------------ config
    def parse_config(self, name: str, config: ConfigInput | Any = None) -> PolicyConfig:
        """Validate ``config`` for ``name``; raises PolicyConfigError listing every problem.

        An instance of the policy's own config model is returned as it is
        (it is frozen and was validated when it was built).
        """
        return _parse(self._resolve(name), config)

    def spec_of(self, policy: EvictionPolicy[Any]) -> PolicySpec | None:
        """The spec that registered ``policy``'s class (errors name its source); None if none.

        Asks nothing of a registry that has not loaded yet: a policy built by
        hand is no reason to import every plugin.
        """
        if self._state is None:
            return None
        kind = type(policy)
        for spec in self._state.specs.values():
            if spec.policy is kind:
                return spec
        return None

    def origin_of(self, policy: EvictionPolicy[Any]) -> tuple[str | None, str | None]:
        """(source, distribution) of the spec that registered ``policy``'s class; Nones if none."""
        spec = self.spec_of(policy)
        return (spec.source, spec.distribution) if spec is not None else (None, None)

    def load_policy(self, name: str, config: ConfigInput | Any = None) -> EvictionPolicy:
        """Build policy ``name`` with a validated config (None, a dict, a JSON string or
        an instance of its config model)."""
        spec = self._resolve(name)
        cfg = _parse(spec, config)
        try:
            return spec.policy(cfg)
        except Exception as e:  # a valid config the policy still refuses: its own bug
            problem = ConfigProblem(
                policy=name, key=None, type="policy_init",
                msg=f"{spec.policy.__name__}({cfg!r}) raised {type(e).__name__}: {e}",
            )
            raise PolicyConfigError(
                f"policy {name!r} from {spec.source} failed to start: {problem.msg}",
                policy=name, problems=[problem],
            ) from e

    def validate(
        self, name: str, config: ConfigInput | Any = None, *, extended: bool = True
    ) -> list[ConfigProblem]:
        """Every problem with ``name`` and ``config`` (empty list: valid). Never raises for them.

        ``extended=False`` also requires ``name`` to be a ``--policy`` choice.
        """
        try:
            spec = self.check_choice(name, extended=False) if not extended else self._resolve(name)
        except PolicyConfigError as e:
            return list(e.problems)
        _, problems = validate_config(name, spec.config_model, config)
        return problems

    def describe_config(self, name: str) -> list[ConfigKey]:
        """Each config key of ``name``: type, default, constraint text, description."""
        return describe_model(self.get(name).config_model)

    def json_schema(self, name: str | None = None) -> dict[str, Any]:
        """JSON Schema of one policy's config, or of every registered policy's (keyed by name).

        Every object in it has ``additionalProperties: false``.
        """
        if name is not None:
            spec = self.get(name)
            schema = spec.config_model.model_json_schema()
            schema.setdefault("description", spec.summary)
            return {"$schema": SCHEMA_DIALECT, "title": f"{name} config", **_without_title(schema)}
        properties: dict[str, Any] = {}
        defs: dict[str, Any] = {}
        for spec in self.specs():
            schema = spec.config_model.model_json_schema()
            local = schema.pop("$defs", {})
            prefix = f"{spec.name}__"
            for def_name, def_schema in local.items():
                defs[prefix + def_name] = _rewrite_refs(def_schema, prefix)
            body = _rewrite_refs(_without_title(schema), prefix)
            body["title"] = f"{spec.name} config"
            if spec.summary:
                body.setdefault("description", spec.summary)
            properties[spec.name] = body
        out: dict[str, Any] = {
            "$schema": SCHEMA_DIALECT,
            "title": "radix-evict policy configs",
            "description": "One key per registered policy; its value is that policy's config.",
            "type": "object",
            "properties": properties,
            "additionalProperties": False,
        }
        if defs:
            out["$defs"] = defs
        return out


def _parse(spec: PolicySpec, config: ConfigInput | Any) -> PolicyConfig:
    cfg, problems = validate_config(spec.name, spec.config_model, config)
    if problems or cfg is None:
        raise PolicyConfigError.from_problems(spec.name, problems)
    return cfg


def _may_provide(failure: PluginFailure, name: Any) -> bool:
    """Whether a failed plugin registered ``name``, or is named after it (entry point, dist)."""
    if not isinstance(name, str):
        return False
    if name in failure.policies or failure.entry_point == name:
        return True
    return name in normalize_dist_name(failure.distribution).split("-")


def _allow_list_notes(st: _State) -> list[str]:
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


def _without_title(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "title"}


def _rewrite_refs(node: Any, prefix: str) -> Any:
    """Point ``#/$defs/X`` at ``#/$defs/<prefix>X``: several policies' defs share one document."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = "#/$defs/" + prefix + v[len("#/$defs/"):]
            else:
                out[k] = _rewrite_refs(v, prefix)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(x, prefix) for x in node]
    return node


registry = Registry()
resolve.install(registry)  # RadixCache(policy=NAME) resolves names through this registry


def load_policy(name: str, config: ConfigInput | Any = None) -> EvictionPolicy:
    """Build a registered policy with a strictly validated config (see :class:`Registry`)."""
    return registry.load_policy(name, config)

