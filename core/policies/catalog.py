"""What ``radix-evict list``, ``show`` and ``validate`` say about the registered policies.

:func:`listing` the policies ``--policy`` accepts (with ``show_all`` the
hidden ones and the plugins that failed), :func:`describe` one policy's
summary, keys, schema and source, :func:`startup_problems` every problem the
cache would raise at startup for a policy and config. The command line
renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from radix_evict.errors import ConfigProblem, PolicyConfigError, ProblemType
from radix_evict.inputs import load_json
from radix_evict.policies.registry import Registry
from radix_evict.policies.spec import PolicySpec

__all__ = ["Listing", "describe", "listing", "policy_row", "shown_config", "startup_problems"]


def policy_row(spec: PolicySpec, choices: list[str]) -> dict[str, Any]:
    """One policy as ``list --json`` shows it."""
    return {
        "name": spec.name,
        "summary": spec.summary,
        "config_keys": list(spec.keys),
        "hidden": spec.hidden,
        "choice": spec.name in choices,
        "distribution": spec.distribution,
        "version": spec.version,
        "entry_point": spec.entry_point,
    }


@dataclass(frozen=True)
class Listing:
    """``list``: the policies in choice order, and with ``show_all`` what failed or clashed."""

    rows: list[dict[str, Any]]
    show_all: bool
    failures: list[Any]
    conflicts: list[Any]
    notes: list[str]  # without show_all, a failed plugin is still one note
    hidden_left_out: bool  # some registered policies are not shown
    failed_left_out: bool  # some plugins failed and are not shown

    def to_dict(self) -> dict[str, Any]:
        """``list --json``."""
        data: dict[str, Any] = {"policies": self.rows}
        if self.show_all:
            data["failures"] = [f.to_dict() for f in self.failures]
            data["conflicts"] = [c.to_dict() for c in self.conflicts]
            data["notes"] = self.notes
        return data


def listing(registry: Registry, show_all: bool = False) -> Listing:
    """The policies ``--policy`` accepts (``show_all``: every registered one), in choice order."""
    choices = registry.choices()
    specs = [s for s in registry.specs() if show_all or s.name in choices]
    order = {n: i for i, n in enumerate(registry.choices(extended=True))}
    specs.sort(key=lambda s: order.get(s.name, len(order)))
    rows = [policy_row(s, choices) for s in specs]
    return Listing(rows, show_all, registry.failures if show_all else [],
                   registry.conflicts if show_all else [],
                   registry.notes(failures=not show_all),
                   not show_all and len(rows) < len(registry.specs()),
                   not show_all and bool(registry.failures))


def describe(registry: Registry, name: str) -> dict[str, Any]:
    """Summary, keys (type, default, constraint, meaning), schema and source of ``name``."""
    spec = registry.get(name)
    return {
        "name": spec.name,
        "summary": spec.summary,
        "hidden": spec.hidden,
        "choice": spec.name in registry.choices(),
        "distribution": spec.distribution,
        "version": spec.version,
        "entry_point": spec.entry_point,
        "config_keys": [k.to_dict() for k in registry.describe_config(name)],
        "schema": registry.json_schema(name),
    }


def startup_problems(registry: Registry, policy: str, config: str | None) -> list[ConfigProblem]:
    """Every problem RadixCache(policy=..., policy_config=...) would raise at startup.

    The name must be a --policy choice (hidden names fail with the registry's
    message); the config goes through ``registry.parse_config``, the one path
    every run takes, and a config that validates must also build the policy.
    """
    try:
        registry.check_choice(policy)
        registry.load_policy(policy, registry.parse_config(policy, config))
    except PolicyConfigError as exc:
        return list(exc.problems) or [
            ConfigProblem(policy=policy, key=None, type=ProblemType.POLICY_INIT, msg=str(exc))
        ]
    return []


def shown_config(text: str) -> Any:
    """The config as ``validate --json`` echoes it: decoded when it is JSON within limits, else
    as given."""
    try:
        return load_json(text, what="the config")
    except ValueError:  # malformed, or over a limit (InputError): the problems say which
        return text
