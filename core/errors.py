"""Exceptions radix-evict raises at its boundaries, and the structured problem they carry.

Every startup error about a policy (unknown name, hidden name, bad config, a
needed plugin that failed) is a :class:`PolicyConfigError`, so a server can
catch one type. Its ``problems`` list is machine-readable (the CLI prints it
as JSON); its ``str()`` is a readable multi-line message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


class ProblemType:
    """The stable ``type`` codes of radix-evict's own problems (pydantic adds its own, such
    as ``extra_forbidden`` or ``int_type``); written here once, compared everywhere."""

    UNKNOWN_POLICY = "unknown_policy"
    HIDDEN_POLICY = "hidden_policy"
    JSON_INVALID = "json_invalid"
    CONFIG_TYPE = "config_type"
    DUPLICATE_KEY = "duplicate_key"
    KEY_TYPE = "key_type"
    FINITE_NUMBER = "finite_number"
    PLUGIN_FAILED = "plugin_failed"
    NAME_CONFLICT = "name_conflict"
    POLICY_INIT = "policy_init"
    DERIVE_FAILED = "derive_failed"
    INPUT_LIMIT = "input_limit"
    TRACE_INVALID = "trace_invalid"


# A policy name that cannot be used: about the name, not a key of its config.
NAME_PROBLEMS = (ProblemType.UNKNOWN_POLICY, ProblemType.HIDDEN_POLICY,
                 ProblemType.PLUGIN_FAILED, ProblemType.NAME_CONFLICT)
# Problems of the environment (a broken or ambiguous plugin), not of what the user typed.
ENV_PROBLEMS = (ProblemType.PLUGIN_FAILED, ProblemType.NAME_CONFLICT)


class RadixEvictError(Exception):
    """Base of every radix-evict error."""


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with a policy name or config.

    ``key`` is the dotted path of the offending key (``None`` when the problem
    is not about one key, e.g. malformed JSON); ``loc`` is the same path as a
    tuple. ``type`` is a stable code (pydantic's error type such as
    ``extra_forbidden`` or ``int_type``, or one of ours: ``unknown_policy``,
    ``hidden_policy``, ``json_invalid``, ``config_type``, ``plugin_failed``,
    ``name_conflict``). ``hint`` is a "did you mean" or a how-to-fix line.
    """

    policy: str
    key: str | None
    type: str
    msg: str
    hint: str | None = None
    valid_keys: tuple[str, ...] = ()
    loc: tuple[str | int, ...] = ()
    input: Any = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f"key {self.key!r}: " if self.key is not None else ""
        text = f"{where}{self.msg}"
        if self.hint and "\n" in self.hint:
            text += f"\n    {self.hint}"
        elif self.hint:
            text += f" ({self.hint})"
        about_keys = self.type in ("extra_forbidden", "missing")
        if about_keys or (self.key is not None and self.valid_keys):
            text += "; " + valid_keys_text(self.policy, self.valid_keys)
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (``input`` is shown as its repr, being arbitrary)."""
        return {
            "policy": self.policy,
            "key": self.key,
            "loc": list(self.loc),
            "type": self.type,
            "msg": self.msg,
            "hint": self.hint,
            "valid_keys": list(self.valid_keys),
            "input": None if self.input is None else repr(self.input),
        }


def valid_keys_text(policy: str, valid_keys: Sequence[str]) -> str:
    """``valid keys: a, b`` or, for a policy without keys, says it takes none."""
    if not valid_keys:
        return f"policy {policy!r} takes no config keys"
    return "valid keys: " + ", ".join(valid_keys)


def json_type(value: Any) -> str:
    """A decoded JSON value's JSON type name, for messages (``number``, ``array``...)."""
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def short_value(value: Any, limit: int = 80) -> str:
    """A value for a message, as JSON, never longer than ``limit`` characters."""
    import json

    try:
        text = json.dumps(value, default=str, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class PolicyConfigError(RadixEvictError, ValueError):
    """An unknown or hidden policy name, or a config that does not validate.

    Raised at startup (``RadixCache(...)``, ``load_policy``), never mid-serving.
    ``problems`` lists every problem found (not just the first).
    """

    def __init__(
        self,
        message: str,
        *,
        policy: str | None = None,
        key: str | None = None,
        problems: Sequence[ConfigProblem] = (),
    ) -> None:
        super().__init__(message)
        self.policy = policy
        self.problems: list[ConfigProblem] = list(problems)
        if key is None and self.problems:
            key = self.problems[0].key
        self.key = key

    @classmethod
    def from_problems(cls, policy: str, problems: Sequence[ConfigProblem]) -> PolicyConfigError:
        """Build the error with a readable message listing every problem."""
        return cls(format_problems(policy, problems), policy=policy, problems=problems)


def format_problems(policy: str, problems: Sequence[ConfigProblem]) -> str:
    """One header line naming the policy, then one line per problem."""
    n = len(problems)
    head = f"invalid config for policy {policy!r}: {n} problem{'s' if n != 1 else ''}"
    return "\n".join([head, *(f"  - {p}" for p in problems)])


class PluginError(PolicyConfigError):
    """A policy that is needed cannot be used because of how plugins loaded.

    Subclasses :class:`PolicyConfigError` so that startup code catching that
    sees it too; the CLI treats it as an environment error (exit code 2), so
    catch this one first where the difference matters.
    """


class PluginLoadError(PluginError):
    """The requested policy would come from a plugin that failed to load."""


class PolicyConflictError(PluginError):
    """Two distributions registered the requested policy name."""


class PolicyRegistrationError(RadixEvictError, ValueError):
    """A plugin called ``register`` with an invalid spec (e.g. a lax config model).

    Raised inside the plugin's hook, so that plugin is recorded as failed and
    the others still register.
    """


class PolicyError(RadixEvictError, RuntimeError):
    """A policy's code misbehaved while the cache ran it: ``score()`` raised or returned garbage.

    The cache operation that called it changed nothing (it was undone). The
    message names the policy and the distribution that registered it;
    ``__cause__`` is the policy's own exception, if it raised one.
    """

    def __init__(
        self, message: str, *, policy: str | None = None, distribution: str | None = None
    ) -> None:
        super().__init__(message)
        self.policy = policy
        self.distribution = distribution


class CacheBusyError(RadixEvictError, RuntimeError):
    """A cache operation began while another was still running on the same cache.

    A :class:`~radix_evict.RadixCache` is single-threaded, as each SGLang
    scheduler's tree is: a second thread calling into it mid-operation gets
    this error at once and the cache is unchanged by that call (the running
    operation finishes normally). A policy that calls back into the cache
    gets a :class:`PolicyError` instead.
    """


class OptionError(RadixEvictError):
    """A value given for an option (by the command line or a library caller) that cannot be
    used, found before any work starts; the message names the option.

    ``invalid``: the value itself is invalid input (a front end's exit 1); otherwise the
    options do not go together, a file cannot be read, or this machine cannot do it
    (exit 2). ``problems``: the policy problems behind it, when a policy or config is what
    is wrong (a broken plugin among them makes it an environment error).
    """

    def __init__(self, message: str, *, invalid: bool = False,
                 problems: Sequence[ConfigProblem] = ()) -> None:
        super().__init__(message)
        self.invalid = invalid
        self.problems: list[ConfigProblem] = list(problems)


def problem_lines(policy: str, problems: Sequence[ConfigProblem]) -> list[str]:
    """People's view of a validation result: policy, key, message and suggestion per problem."""
    n = len(problems)
    lines = [f"policy {policy!r}: {n} problem{'s' if n != 1 else ''}"]
    for p in problems:
        lines.append("  - " + problem_text(p).replace("\n", "\n    "))
    return lines


def problem_text(p: ConfigProblem) -> str:
    """A problem in one line; name problems already carry their hint in the message."""
    if p.key is None and p.hint and p.hint in p.msg:
        return p.msg
    return str(p)
