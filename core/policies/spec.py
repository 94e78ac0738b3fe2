"""The record a plugin registers for each policy: :class:`PolicySpec`.

Its own module, below the hook specifications and the registry that both
name it, so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from radix_evict.policies.contract import EvictionPolicy, NoConfig, PolicyConfig
from radix_evict.policies.derive import ConfigDeriver


@dataclass(frozen=True)
class PolicySpec:
    """What a plugin passes to ``register``: one policy and how to present it.

    ``config_model`` defaults to the policy class's ``Config``. ``hidden``
    policies are registered but not offered as ``--policy`` choices until
    some package extends the choice list with them. ``distribution``,
    ``version`` and ``entry_point`` are filled in by the registry from the
    entry point the spec came through; whatever a plugin sets there is replaced.
    ``derive_config`` (optional) derives a config from a workload's measured
    statistics when a simulation runs the policy without one
    (:mod:`radix_evict.policies.derive`).
    """

    name: str
    policy: type[EvictionPolicy]
    config_model: type[PolicyConfig] = None  # type: ignore[assignment]
    summary: str = ""
    hidden: bool = False
    distribution: str | None = None
    version: str | None = None
    entry_point: str | None = None
    derive_config: ConfigDeriver | None = None

    def __post_init__(self) -> None:
        if self.config_model is None:
            object.__setattr__(self, "config_model", getattr(self.policy, "Config", NoConfig))

    @property
    def source(self) -> str:
        """``dist version (entry point 'ep')``: how messages name where this came from."""
        ver = f" {self.version}" if self.version else ""
        return f"{self.distribution or '?'}{ver} (entry point {self.entry_point!r})"

    @property
    def keys(self) -> tuple[str, ...]:
        """The config keys this policy accepts."""
        return tuple(f.alias or n for n, f in self.config_model.model_fields.items())
