"""Which config a simulated run uses: given (validated once), derived from the workload, or none.

:class:`PolicyRun` is the one type a (policy, config) travels in, from the
command line (or the library's caller) down to the replay: the policy's
registered name, its validated config and its label, parsed once when it is
built. :meth:`PolicyRun.on` gives what one run uses on one workload
(:class:`RunConfig`: the given config, the workload's derived one, or none).

A config given as a dict or JSON string becomes its policy's validated,
frozen config object once, before any replay starts; that object is what the
cache is built with, in this process or in a forked worker. A policy given no
config whose spec carries ``derive_config`` gets one derived from the
workload's measured statistics (:meth:`Workload.stats`), validated the same
way and computed once per workload and policy. No policy is named here.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import ConfigProblem, PolicyConfigError
from radix_evict.policies.config import ConfigInput
from radix_evict.policies.contract import PolicyConfig
from radix_evict.policies.derive import DerivedConfig, as_derived
from radix_evict.policies.registry import registry
from radix_evict.policies.spec import PolicySpec
from radix_evict.sim.workloads import Workload

GIVEN = "given"
DERIVED = "workload-suggested"
NONE = "none"


def config_dict(config: PolicyConfig) -> dict[str, Any]:
    """A validated config as JSON types: the keys that were set (given or derived)."""
    return config.model_dump(mode="json", by_alias=True, exclude_unset=True)


@dataclass(frozen=True)
class RunConfig:
    """The config one run uses and where it came from (``source``: given, derived, none)."""

    config: PolicyConfig | None
    source: str
    derived: DerivedConfig | None = None

    def as_dict(self) -> dict[str, Any] | None:
        """What results report as ``policy_config`` (None: the policy ran without one)."""
        return None if self.config is None else config_dict(self.config)


@dataclass(frozen=True)
class PolicyRun:
    """One policy to replay, parsed once: its registered name, validated config and label.

    ``config`` is the policy's validated, frozen config object (one object
    serves every replay and worker); a dict or JSON string given here is
    validated when the run is built (PolicyConfigError names every problem),
    so nothing below checks it again. None: derived from each workload where
    the policy's spec derives one (:meth:`on`), else the policy's defaults.
    ``label`` names the run in tables (default: the policy's name).
    """

    policy: str
    config: PolicyConfig | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        if self.config is not None and not isinstance(self.config, PolicyConfig):
            given: ConfigInput = self.config
            object.__setattr__(self, "config", registry.parse_config(self.policy, given))

    @classmethod
    def parse(cls, policy: str, config: ConfigInput = None, label: str | None = None
              ) -> PolicyRun:
        """A run from a config in any accepted form (dict, JSON string, config object)."""
        return cls(policy, config, label)  # type: ignore[arg-type]  # __post_init__ validates

    @property
    def name(self) -> str:
        return self.label or self.policy

    def on(self, workload: Workload) -> RunConfig:
        """The config this run uses on ``workload``: its own, the derived one, or none."""
        return resolve_config(workload, self.policy, self.config)


_derived: weakref.WeakKeyDictionary[Workload, dict[str, RunConfig]] = weakref.WeakKeyDictionary()


def derive(spec: PolicySpec, workload: Workload) -> RunConfig | None:
    """``spec``'s config derived from ``workload`` (validated); None if it has no deriver.

    Raises PolicyConfigError naming the policy and where it came from when its
    deriver fails or derives a config that its own model refuses.
    """
    deriver = spec.derive_config
    if deriver is None:
        return None
    per_policy = _derived.setdefault(workload, {})
    found = per_policy.get(spec.name)
    if found is not None:
        return found
    try:
        derived = as_derived(deriver(workload.stats()))
    except Exception as e:  # the plugin's bug: say whose
        problem = ConfigProblem(
            policy=spec.name, key=None, type="derive_failed",
            msg=f"policy {spec.name!r}: derive_config of {spec.source} raised "
                f"{type(e).__name__}: {e} (workload {workload.name}); give the policy a --config",
        )
        raise PolicyConfigError(problem.msg, policy=spec.name, problems=[problem]) from e
    try:
        cfg = registry.parse_config(spec.name, derived.config)
    except PolicyConfigError as e:
        raise PolicyConfigError(
            f"policy {spec.name!r}: derive_config of {spec.source} derived an invalid config "
            f"from workload "
            f"{workload.name}:\n{e}", policy=spec.name, problems=e.problems,
        ) from None
    found = per_policy[spec.name] = RunConfig(cfg, DERIVED, derived)
    return found


def resolve_config(workload: Workload, policy: str, config: ConfigInput) -> RunConfig:
    """The config ``policy`` runs with on ``workload``.

    A validated config object is used as it is (it must be the policy's own
    model); a dict or JSON string is validated here; None takes the
    policy's derived config if its spec has a deriver, else the policy's defaults.
    """
    if isinstance(config, PolicyConfig):  # the cache checks it is the policy's own model
        return RunConfig(config, GIVEN)
    if config is not None:
        return RunConfig(registry.parse_config(policy, config), GIVEN)
    return derive(registry.get(policy), workload) or RunConfig(None, NONE)


def derivers() -> list[PolicySpec]:
    """Every registered policy that derives its config, choices first."""
    specs = [registry.get(n) for n in registry.choices(extended=True)]
    return [s for s in specs if s.derive_config is not None]


def derived_for(workloads: Sequence[Workload], runs: Sequence[PolicyRun]
                ) -> dict[str, dict[str, DerivedConfig]]:
    """Per deriving policy (every one, choices first): the config each workload derives for
    it, where a run of it has no config of its own (empty where none derives)."""
    out: dict[str, dict[str, DerivedConfig]] = {}
    for spec in derivers():
        found: dict[str, DerivedConfig] = {}
        if any(r.policy == spec.name and r.config is None for r in runs):
            for w in workloads:
                run = derive(spec, w)
                if run is not None and run.derived is not None:
                    found[w.name] = run.derived
        out[spec.name] = found
    return out


def describe_workload(workload: Workload) -> dict[str, Any]:
    """``workload.describe()`` in JSON types, with ``suggested_NAME`` for each deriving policy.

    The suggestions follow ``default_pool_tokens``. A deriver that fails is
    left out here: it is an error where that policy runs, not for every run.
    """
    info: Mapping[str, Any] = workload.describe()
    suggested = {}
    for spec in derivers():
        try:
            run = derive(spec, workload)
        except PolicyConfigError:
            continue
        if run is not None and run.derived is not None:
            suggested[f"suggested_{spec.name}"] = run.derived.to_dict()
    out: dict[str, Any] = {}
    for key, value in info.items():
        out[key] = value
        if key == "default_pool_tokens":
            out.update(suggested)
    out.update({k: v for k, v in suggested.items() if k not in out})
    result: dict[str, Any] = json.loads(json.dumps(out, default=str))
    return result
