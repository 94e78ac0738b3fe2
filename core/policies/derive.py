"""A policy's optional config deriver: how a simulation runs it well without a given config.

Some policies have no sensible defaults: tlru needs to know how much a
conversation's next turn adds. A policy's :class:`~radix_evict.PolicySpec`
may carry ``derive_config``, a function that a simulation calls with what it
measured about the workload (:class:`WorkloadStats`) when the user gave the
policy no config. It returns the config (a dict of the policy's keys, or a
:class:`DerivedConfig` that also says how it was derived); the simulation
validates it like any other config and marks it ``(derived)`` in its tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, eq=False)
class WorkloadStats:
    """What a simulation measured about a workload before replaying it.

    ``growth`` holds, per request, the prompt tokens it adds beyond what its
    own session (or, for a trace, any earlier request) already put in the
    cache: a conversation's next-turn growth. ``growth_what`` says what the
    samples are, in words, for messages.
    """

    workload: str
    requests: int
    growth: npt.NDArray[np.int64]
    growth_what: str

    @property
    def samples(self) -> int:
        return int(self.growth.size)

    @property
    def mean_growth(self) -> float:
        """Mean next-turn growth in tokens (0.0 without samples)."""
        return float(self.growth.mean()) if self.growth.size else 0.0


@dataclass(frozen=True)
class DerivedConfig:
    """A derived config and how it was derived.

    ``derivation`` explains this workload's value in a sentence or two;
    ``rule`` states the rule itself, the same for every workload (a matrix
    run says it once); ``details`` are the figures behind it, for JSON.
    """

    config: dict[str, Any]
    derivation: str = ""
    rule: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the details, the derivation, then the config."""
        return {**self.details, "derivation": self.derivation, "config": dict(self.config)}


ConfigDeriver: TypeAlias = Callable[[WorkloadStats], "DerivedConfig | Mapping[str, Any]"]


def as_derived(value: DerivedConfig | Mapping[str, Any] | Any) -> DerivedConfig:
    """A deriver's answer as a DerivedConfig (a plain mapping is the config alone)."""
    if isinstance(value, DerivedConfig):
        return value
    if isinstance(value, Mapping):
        return DerivedConfig(config=dict(value))
    raise TypeError(
        f"derive_config must return a dict of config keys or a DerivedConfig, "
        f"got {type(value).__name__}"
    )
