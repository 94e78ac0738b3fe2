"""Minimal registry (to be replaced by the full plugin framework)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import pluggy
from pydantic import ValidationError

from radix_evict import hookspecs
from radix_evict.errors import PolicyConfigError
from radix_evict.policy import EvictionPolicy, PolicyConfig

GROUP = "radix_evict.policies"
PUBLIC = ("lru", "lfu", "slru", "priority", "tlru")


@dataclass(frozen=True)
class PolicySpec:
    name: str
    policy: type[EvictionPolicy]
    summary: str = ""
    hidden: bool = False
    config: type[PolicyConfig] | None = None
    distribution: str | None = None

    @property
    def config_model(self) -> type[PolicyConfig]:
        return self.config or self.policy.Config


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, PolicySpec] | None = None

    def _load(self) -> dict[str, PolicySpec]:
        if self._specs is None:
            specs: dict[str, PolicySpec] = {}
            pm = pluggy.PluginManager(hookspecs.PROJECT)
            pm.add_hookspecs(hookspecs)
            for ep in entry_points(group=GROUP):
                pm.register(ep.load(), name=ep.name)
            pm.hook.radix_evict_register_policies(register=lambda s: specs.setdefault(s.name, s))
            self._specs = specs
        return self._specs

    def choices(self, extended: bool = False) -> list[str]:
        specs = self._load()
        return list(specs) if extended else [n for n in PUBLIC if n in specs]

    def get(self, name: str) -> PolicySpec:
        try:
            return self._load()[name]
        except KeyError:
            raise PolicyConfigError(f"unknown policy {name!r}", policy=name) from None

    def load_policy(self, name: str, config: Any = None) -> EvictionPolicy:
        spec = self.get(name)
        if isinstance(config, str):
            config = json.loads(config)
        try:
            cfg = spec.config_model.model_validate(config or {})
        except ValidationError as e:
            raise PolicyConfigError(f"policy {name!r}: {e}", policy=name) from None
        return spec.policy(cfg)


registry = Registry()
load_policy = registry.load_policy
