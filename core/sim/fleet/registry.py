"""The router registry: every router a plugin registered, found once, and strict configs.

Routers are a second plugin kind beside policies, found with the policies'
own finder (:func:`radix_evict.policies.plugins.find_plugins`, group
``radix_evict.routers``, radix-evict's ``builtin`` first, the same
``RADIX_EVICT_PLUGINS`` allow-list) and loaded one plugin at a time: a
plugin that fails is recorded by package and entry point, and asking for a
router it would have given names it. :func:`build_router` is the one way a
(name, config) pair becomes a router: the config validated strictly, each
problem naming its key.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import pluggy

from radix_evict.errors import ConfigProblem, PolicyRegistrationError
from radix_evict.policies import hookspecs as policy_hookspecs
from radix_evict.policies.config import model_keys, validate_config
from radix_evict.policies.loading import NAME_RE
from radix_evict.policies.plugins import (
    InterruptWatch,
    PluginFailure,
    PluginSource,
    allow_list,
    find_plugins,
    in_process_source,
    plugin_failure,
    select_plugins,
    watch_interrupts,
)
from radix_evict.sim.fleet import hookspecs
from radix_evict.sim.fleet.errors import RouterConfigError, RouterPluginError, UnknownRouterError
from radix_evict.sim.fleet.router import Router, RouterConfig, RouterSpec

__all__ = ["RouterRegistry", "build_router", "listing", "parse_router_config", "router_names",
           "router_registry", "router_spec", "routers"]

ConfigArg: TypeAlias = Mapping[str, Any] | str | RouterConfig | None


def check_router_spec(spec: Any, src: PluginSource) -> RouterSpec:
    """A registration checked (raising fails that plugin only)."""
    if not isinstance(spec, RouterSpec):
        raise PolicyRegistrationError(
            f"register() takes a RouterSpec, got {type(spec).__name__}")
    name = spec.name
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PolicyRegistrationError(
            f"router name {name!r} is invalid: use 1-64 lowercase letters, digits, '_' or '-'")
    if not (isinstance(spec.router_class, type) and issubclass(spec.router_class, Router)):
        raise PolicyRegistrationError(
            f"router {name!r}: {spec.router_class!r} is not a subclass of Router")
    model: Any = spec.config_model
    if not (isinstance(model, type) and issubclass(model, RouterConfig)):
        raise PolicyRegistrationError(
            f"router {name!r}: config model {model!r} is not a subclass of RouterConfig")
    cfg = model.model_config
    if (cfg.get("extra"), cfg.get("frozen"), cfg.get("strict")) != ("forbid", True, True):
        raise PolicyRegistrationError(
            f"router {name!r}: config model {model.__name__} must be strict "
            "(extra='forbid', frozen=True, strict=True)")
    return spec


def _load_one(src: PluginSource, watch: InterruptWatch) -> list[RouterSpec] | PluginFailure:
    """Import one plugin and call its router hook; its own faults become a failure."""
    specs: list[RouterSpec] = []
    phase = "import"
    try:
        obj = src.loader()
        phase = "hooks"
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(policy_hookspecs)  # a module may implement both kinds' hooks
        pm.add_hookspecs(hookspecs)
        pm.register(obj, name=f"{src.distribution}:{src.entry_point}")
        pm.check_pending()
        phase = "register"
        pm.hook.radix_evict_register_routers(
            register=lambda spec: specs.append(check_router_spec(spec, src)))
    except KeyboardInterrupt as exc:
        if watch.interrupted:
            raise
        return plugin_failure(src, phase, exc, specs)
    except BaseException as exc:  # the plugin's fault: record it, load the others
        return plugin_failure(src, phase, exc, specs)
    return specs


@dataclasses.dataclass
class _State:
    specs: dict[str, RouterSpec] = dataclasses.field(default_factory=dict)
    owners: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> plugin label
    failures: list[PluginFailure] = dataclasses.field(default_factory=list)
    conflicts: list[str] = dataclasses.field(default_factory=list)


class RouterRegistry:
    """Registered routers and the plugins that failed; ``find``/``environ`` for tests."""

    def __init__(self, *, find: Callable[[str], list[PluginSource]] = find_plugins,
                 environ: Mapping[str, str] | None = None) -> None:
        self._find, self._environ = find, environ
        self._extra: list[PluginSource] = []
        self._state: _State | None = None
        self._lock = threading.RLock()

    def reload(self) -> None:
        """Forget what loaded; the next question loads the plugins again."""
        with self._lock:
            self._state = None

    def add_plugin(self, plugin: Any, *, name: str) -> None:
        """A plugin object given in-process (tests, embedding code), loaded after the others."""
        with self._lock:
            self._extra = [s for s in self._extra if s.entry_point != name]
            self._extra.append(in_process_source(plugin, name=name))
            self._state = None

    def remove_plugin(self, name: str) -> None:
        with self._lock:
            self._extra = [s for s in self._extra if s.entry_point != name]
            self._state = None

    def _ensure(self) -> _State:
        with self._lock:
            if self._state is None:
                self._state = self._load()
            return self._state

    def _load(self) -> _State:
        st = _State()
        to_load, _ = select_plugins(self._find(hookspecs.GROUP), allow_list(self._environ))
        with watch_interrupts() as watch:
            loaded = [(src, _load_one(src, watch)) for src in [*to_load, *self._extra]]
        for src, result in loaded:
            if isinstance(result, PluginFailure):
                st.failures.append(result)
                continue
            for spec in result:
                if spec.name in st.specs:
                    st.conflicts.append(f"router {spec.name!r} is registered by "
                                        f"{st.owners[spec.name]} (kept) and by {src.label} "
                                        "(refused)")
                    continue
                st.specs[spec.name] = spec
                st.owners[spec.name] = src.label
        return st

    @property
    def failures(self) -> list[PluginFailure]:
        return list(self._ensure().failures)

    @property
    def conflicts(self) -> list[str]:
        return list(self._ensure().conflicts)

    def routers(self) -> dict[str, RouterSpec]:
        """Every registered router by name, in registration order (built-ins first)."""
        return dict(self._ensure().specs)

    def source(self, name: str) -> str:
        """The plugin (package and entry point) that registered ``name``."""
        return self._ensure().owners[name]

    def router_spec(self, name: str) -> RouterSpec:
        """The spec of ``name``; an unknown name names it, the known ones and any broken
        plugin (which may be where it would have come from)."""
        st = self._ensure()
        spec = st.specs.get(name)
        if spec is not None:
            return spec
        known = ", ".join(st.specs) or "none"
        if st.failures:
            broken = "; ".join(str(f) for f in st.failures)
            raise RouterPluginError(f"unknown router {name!r} (known: {known}); a router plugin "
                                    f"failed to load: {broken}", router=name)
        raise UnknownRouterError(f"unknown router {name!r}; known routers: {known}",
                                 router=name)

    def parse_config(self, name: str, config: ConfigArg) -> RouterConfig:
        """``config`` (a mapping, JSON text, a config object or None) validated strictly."""
        model = self.router_spec(name).config_model
        value, problems = validate_config(name, model, config)  # type: ignore[arg-type]
        if problems or value is None:
            raise RouterConfigError(_problems_text(name, model, problems), router=name,
                                    problems=problems)
        assert isinstance(value, RouterConfig)
        return value

    def build_router(self, name: str, config: ConfigArg = None, *, replicas: int,
                     seed: int = 0) -> Router:
        """A router for ``replicas`` replicas, its config checked (errors name the key)."""
        spec = self.router_spec(name)
        if replicas < 1:
            raise ValueError(f"a fleet needs at least 1 replica, got {replicas!r}")
        return spec.router_class(self.parse_config(name, config), replicas=replicas, seed=seed)


def _problems_text(name: str, model: type[RouterConfig],
                   problems: list[ConfigProblem]) -> str:
    keys = model_keys(model)
    valid = ("valid keys: " + ", ".join(keys)) if keys else f"router {name!r} takes no keys"
    lines = [f"invalid config for router {name!r}:"]
    for p in problems:
        where = f"key {p.key!r}: " if p.key is not None else ""
        lines.append(f"  - {where}{p.msg}")
    return "\n".join([*lines, f"  ({valid})"])


router_registry = RouterRegistry()


def routers() -> dict[str, RouterSpec]:
    """Every registered router: ``{name: RouterSpec}``."""
    return router_registry.routers()


def router_names() -> list[str]:
    return list(router_registry.routers())


def router_spec(name: str) -> RouterSpec:
    """The spec of router ``name`` (UnknownRouterError naming the known ones)."""
    return router_registry.router_spec(name)


def parse_router_config(name: str, config: ConfigArg) -> RouterConfig:
    """``config`` for router ``name``, validated strictly (RouterConfigError names the key)."""
    return router_registry.parse_config(name, config)


def build_router(name: str, config: ConfigArg = None, *, replicas: int, seed: int = 0
                 ) -> Router:
    """Router ``name`` for ``replicas`` replicas, ``config`` (mapping, JSON or None) checked."""
    return router_registry.build_router(name, config, replicas=replicas, seed=seed)


def config_text(config: Mapping[str, Any] | None) -> str:
    """A config as compact JSON, for tables and messages."""
    return json.dumps(dict(config or {}), sort_keys=True)


def listing() -> dict[str, Any]:
    """What ``radix-evict routers`` shows: each router (name, summary, config keys with their
    defaults, the plugin that gave it) and the plugins that failed to load."""
    r = router_registry
    rows = [{"name": name, "summary": spec.summary,
             "config": {k: (None if f.is_required() else f.default)
                        for k, f in spec.config_model.model_fields.items()},
             "from": r.source(name)} for name, spec in r.routers().items()]
    return {"routers": rows, "failures": [f.to_dict() for f in r.failures],
            "conflicts": r.conflicts}
