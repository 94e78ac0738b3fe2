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

:meth:`Registry.parse_config` is the one way a (policy, config) pair becomes
a validated, frozen config for a run. Loading is :mod:`~radix_evict.policies.loading`,
the messages for names that cannot be used :mod:`~radix_evict.policies.messages`,
JSON Schema :mod:`~radix_evict.policies.schema`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from radix_evict.errors import ConfigProblem, PolicyConfigError, ProblemType
from radix_evict.policies import resolve
from radix_evict.policies.config import ConfigInput, validate_config
from radix_evict.policies.contract import ConfigWarning, EvictionPolicy, PolicyConfig
from radix_evict.policies.describe import ConfigKey, describe_model
from radix_evict.policies.loading import ChoiceProblem, LoadState, NameConflict, load_state
from radix_evict.policies.messages import (
    allow_list_notes,
    conflict_error,
    hidden_error,
    unknown_error,
)
from radix_evict.policies.plugins import (
    GROUP,
    IN_PROCESS,
    LoadedPlugin,
    PluginFailure,
    PluginSource,
    find_plugins,
    in_process_source,
    normalize_dist_name,
)
from radix_evict.policies.schema import combined_schema, policy_schema
from radix_evict.policies.spec import PolicySpec

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
        self._state: LoadState | None = None
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

    def _ensure(self) -> LoadState:
        state = self._state
        if state is not None:
            return state
        with self._lock:
            if self._state is None:
                if self._loading:
                    raise RuntimeError("the policy registry was used while plugins were loading")
                self._loading = True
                try:
                    self._state = load_state(self._find, self.group, self._environ,
                                             self._extra)
                finally:
                    self._loading = False
            return self._state

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
            raise unknown_error(self._ensure(), name, self.choices(extended=True))
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
        out += allow_list_notes(st)
        out += [str(c) for c in st.choice_problems]
        return out

    def _resolve(self, name: str) -> PolicySpec:
        spec = self.get(name)
        conflict = conflict_error(self._ensure(), name)
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
            raise unknown_error(st, name, offered)
        raise hidden_error(name, spec, offered)

    # ------------------------------------------------------------------ config
    def parse_config(self, name: str, config: ConfigInput | Any = None) -> PolicyConfig:
        """The one way (policy, config) becomes a validated, frozen config for a run.

        ``config`` is None, a mapping, a JSON string (read within
        :mod:`radix_evict.inputs`' limits) or an instance of the policy's own
        config model, returned as it is (frozen, validated when it was built).
        Raises PolicyConfigError listing every problem.
        """
        spec = self._resolve(name)
        cfg, problems = validate_config(spec.name, spec.config_model, config)
        if problems or cfg is None:
            raise PolicyConfigError.from_problems(spec.name, problems)
        return cfg

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
        """Build policy ``name`` from :meth:`parse_config`'s result (None, a dict, a JSON
        string or an instance of its config model)."""
        cfg = self.parse_config(name, config)
        spec = self._resolve(name)
        try:
            return spec.policy(cfg)
        except Exception as e:  # a valid config the policy still refuses: its own bug
            problem = ConfigProblem(
                policy=name, key=None, type=ProblemType.POLICY_INIT,
                msg=f"{spec.policy.__name__}({cfg!r}) raised {type(e).__name__}: {e}",
            )
            raise PolicyConfigError(
                f"policy {name!r} from {spec.source} failed to start: {problem.msg}",
                policy=name, problems=[problem],
            ) from e

    def validate(
        self, name: str, config: ConfigInput | Any = None, *, extended: bool = True
    ) -> list[ConfigProblem]:
        """Every problem :meth:`parse_config` finds (empty list: valid). Never raises for them.

        ``extended=False`` also requires ``name`` to be a ``--policy`` choice.
        """
        try:
            if not extended:
                self.check_choice(name, extended=False)
            self.parse_config(name, config)
        except PolicyConfigError as e:
            return list(e.problems)
        return []

    def config_warnings(self, name: str, config: ConfigInput | Any = None) -> list[ConfigWarning]:
        """What the policy itself says defeats it in a valid ``config``
        (:meth:`PolicyConfig.config_warnings`); empty when there is nothing, or
        when the config is invalid (:meth:`validate` reports that).

        The policy's method is plugin code: if it raises or returns something
        else than warnings, that is one warning naming the policy and its source.
        """
        try:
            cfg = self.parse_config(name, config)
        except PolicyConfigError:
            return []
        try:
            found = list(cfg.config_warnings())
            if all(isinstance(w, ConfigWarning) for w in found):
                return found
            problem = "returned something other than a list of ConfigWarning"
        except Exception as e:  # the policy's own bug: reported, never fatal to the caller
            problem = f"raised {type(e).__name__}: {e}"
        spec = self._resolve(name)
        return [ConfigWarning(
            (), "config_warnings_failed",
            f"{type(cfg).__name__}.config_warnings() of policy {name!r} from {spec.source} "
            f"{problem}; its config was not checked for settings that defeat it")]

    def describe_config(self, name: str) -> list[ConfigKey]:
        """Each config key of ``name``: type, default, constraint text, description."""
        return describe_model(self.get(name).config_model)

    def json_schema(self, name: str | None = None) -> dict[str, Any]:
        """JSON Schema of one policy's config, or of every registered policy's (keyed by name).

        Every object in it has ``additionalProperties: false``.
        """
        if name is not None:
            return policy_schema(self.get(name))
        return combined_schema(self.specs())


registry = Registry()
resolve.install(registry)  # RadixCache(policy=NAME) resolves names through this registry


def load_policy(name: str, config: ConfigInput | Any = None) -> EvictionPolicy:
    """Build a registered policy with a strictly validated config (see :class:`Registry`)."""
    return registry.load_policy(name, config)
