"""SGLang 0.5.23's verdict on an eviction policy and its config, and radix-evict's on top.

Errors are what SGLang itself refuses, in the order it checks:

1. its argument parser: the policy must be one of ``--radix-eviction-policy``'s
   choices (``native.NATIVE_CHOICES``; its other strategies are not among
   them), and the config must be text ``json.loads`` accepts;
2. its startup checks on its own policies (tlru's server-argument check, the
   strategy's keyword arguments, the Rust core's C long), stated once in
   :mod:`radix_evict.sglang.startup` and shared with ``radix-evict sglang check``.

A policy only radix-evict packages provide is valid where radix-evict's
SGLang plugin loads it (:func:`radix_evict.sglang.check.plugin_presence`);
SGLang then builds it with radix-evict's own strict validation, whose
problems are errors. For SGLang's own policies, radix-evict's stricter rules
(``RadixCache``, ``radix-evict validate``) give warnings: SGLang runs the
config, radix-evict would refuse or knows it does nothing.

This module places each problem at the words of the file it is about.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from radix_evict.errors import (
    ENV_PROBLEMS,
    NAME_PROBLEMS,
    ConfigProblem,
    ProblemType,
    valid_keys_text,
)
from radix_evict.policies.registry import registry
from radix_evict.sglang import native
from radix_evict.sglang.check import plugin_presence
from radix_evict.sglang.startup import SERVER_ARGS, Refusal, startup_verdict
from radix_evict.suggest import did_you_mean

from . import hicache
from .argv import CONFIG_FLAG, POLICY_FLAG, Occurrence, problem_at
from .model import ERROR, INVALID, NOTE, UNCHECKED, WARNING, LintProblem
from .readers.json_tree import parse_json
from .readers.nodes import MAX_VALUE_NODES, LimitExceeded, Node, ParseFailure, short
from .readers.shell import is_opaque
from .text import Text

SGLANG_VERSION = native.SUPPORTED_VERSION  # for messages (the fact is native.py's)


def plugin_choices() -> list[str]:
    """Names radix-evict's SGLang plugin adds to SGLang's choices: radix-evict's, minus SGLang's."""
    return [n for n in registry.choices() if n not in native.NATIVE_CHOICES]


class Verdict:
    """Collects the problems of one resolved setting, placed at the words they are about."""

    def __init__(self, policy: Occurrence | None, config: Occurrence | None,
                 cache_disabled: bool = False) -> None:
        self.policy = policy
        self.config = config
        self.cache_disabled = cache_disabled
        self.problems: list[LintProblem] = []
        self.root: Node | None = None  # the config's JSON object, with positions

    # -------------------------------------------------------------- placing problems
    def _anchor(self) -> tuple[Text, str]:
        occ = self.policy or self.config
        assert occ is not None
        return occ.value.word, occ.label

    def at_policy(self, type_: str, msg: str, hint: str | None = None,
                  severity: str = ERROR, outcome: str = INVALID) -> None:
        if self.policy is not None:
            word, label = self.policy.value.word, self.policy.label
        else:
            word, label = self._anchor()
            msg += f" (no {POLICY_FLAG} is set, so SGLang uses {native.DEFAULT_POLICY})"
        self.problems.append(problem_at(word, 0, type_, msg, loc=label, hint=hint,
                                        severity=severity, outcome=outcome))

    def at_config(self, path: tuple[Any, ...], type_: str, msg: str, hint: str | None = None,
                  severity: str = ERROR, key: bool = False) -> None:
        """A problem about the config, or about its key (``key``) or value at ``path``."""
        assert self.config is not None
        label = self.config.label + "".join(f".{p}" for p in path)
        if self.policy is None:
            why = f"no {POLICY_FLAG} is set, so SGLang uses {native.DEFAULT_POLICY}"
            hint = f"{hint}; {why}" if hint else why
        node = _find(self.root, path, key)
        if node is not None:
            line, column = node.source.where(node.offset())
            self.problems.append(LintProblem(node.source.path, label, type_, msg, hint, line,
                                             column, severity))
            return
        self.problems.append(problem_at(self.config.value.word, 0, type_, msg, loc=label,
                                        hint=hint, severity=severity))

    def at_setting(self, path: tuple[Any, ...], type_: str, msg: str, hint: str | None = None,
                   severity: str = ERROR, key: bool = False) -> None:
        """At the config key if there is a config, else at the policy (tlru without one)."""
        if self.config is not None:
            self.at_config(path, type_, msg, hint, severity, key)
        else:
            self.at_policy(type_, msg + f" ({CONFIG_FLAG} is not set)", hint, severity)

    # -------------------------------------------------------------- the checks
    def run(self) -> list[LintProblem]:
        name = self.policy.value.text if self.policy is not None else native.DEFAULT_POLICY
        for occ in (self.policy, self.config):
            if occ is not None and occ.value.node is None and is_opaque(occ.value.text):
                self.problems.append(problem_at(
                    occ.value.word, 0, "not_checked",
                    f"{occ.flag} {short(occ.value.text)} is filled in at deploy time "
                    "(an environment variable or command substitution); not checked",
                    loc=occ.label, severity=NOTE))
                return self.problems
        own = name in native.NATIVE_CHOICES
        plugin = not own and self._plugin_policy(name)
        obj, parsed = self._parse_config()
        if not (own or plugin) or not parsed:
            return self.problems
        before = len(self.problems)
        if plugin:
            if self._radix_evict(name, obj, ERROR):
                self._runs_in_sglang(name, obj)
        else:
            refused = self._sglang_startup(name, obj)
            if any(r.stage == SERVER_ARGS for r in refused):
                return self.problems  # its server-argument check runs with the cache disabled too
            if not refused:
                self._radix_evict(name, obj, WARNING)
        if self.cache_disabled:  # SGLang builds no strategy: what would fail is advice now
            self.problems[before:] = [_not_now(p) for p in self.problems[before:]]
        return self.problems

    def _plugin_policy(self, name: str) -> bool:
        """Whether radix-evict's SGLang plugin makes ``name`` valid; reports it either way."""
        extra = plugin_choices()
        if name in extra:
            spec = registry.get(name)
            why_not = plugin_presence().why_not()
            if why_not is not None:
                self.at_policy(
                    "plugin_unavailable",
                    f"{name!r} comes from {spec.source}, not SGLang {SGLANG_VERSION}: SGLang "
                    f"accepts it only through radix-evict's SGLang plugin, and here {why_not}",
                    hint=f"SGLang's own choices: {', '.join(native.NATIVE_CHOICES)}")
                return False
            self.at_policy(
                "plugin_policy",
                f"{name!r} is not one of SGLang {SGLANG_VERSION}'s policies: it comes from "
                f"{spec.source}, and SGLang accepts it only where radix-evict's SGLang plugin "
                "loads it (radix-evict and that package installed in the server's environment, "
                "the plugin allowed by SGLANG_PLUGINS and RADIX_EVICT_PLUGINS)",
                severity=NOTE)
            return True
        problems = registry.validate(name, None, extended=False)
        failed = [p for p in problems if p.type in ENV_PROBLEMS]
        if failed:
            self.at_policy(failed[0].type, failed[0].msg, outcome=UNCHECKED)
            return False
        offered = ", ".join(native.NATIVE_CHOICES)
        if extra:
            offered += f"; radix-evict's SGLang plugin adds {', '.join(extra)}"
        near = did_you_mean(name, [*native.NATIVE_CHOICES, *extra])
        if name in native.NATIVE_POLICIES:
            self.at_policy(
                ProblemType.HIDDEN_POLICY,
                f"SGLang {SGLANG_VERSION} has a {name!r} strategy but not on "
                f"{POLICY_FLAG}'s choices, so its argument parser refuses it (choices: {offered})")
        else:
            self.at_policy(
                ProblemType.UNKNOWN_POLICY,
                f"SGLang refuses {name!r}: invalid choice for {POLICY_FLAG} (choices: {offered})",
                hint=near)
        return False

    def _parse_config(self) -> tuple[Any, bool]:
        """The config as SGLang's ``json.loads`` reads it; (value, whether it parsed)."""
        if self.config is None:
            return None, True
        arg = self.config.value
        text = arg.text
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            self.problems.append(problem_at(
                arg.word, min(exc.pos, max(len(text) - 1, 0)), ProblemType.JSON_INVALID,
                f"SGLang refuses it: not valid JSON ({exc.msg} at column {exc.colno})",
                loc=self.config.label,
                hint=f"write a JSON object, e.g. {CONFIG_FLAG} '{{\"key\": 1}}'"))
            return None, False
        except RecursionError:
            self.problems.append(problem_at(arg.word, 0, "too_deep",
                                            "the JSON is nested too deeply", loc=self.config.label))
            return None, False
        if arg.node is not None:
            self.root = arg.node
        else:
            try:
                self.root = parse_json(text, arg.word.source, parent=arg.word)
            except (ParseFailure, LimitExceeded):
                self.root = None
        if self.root is not None and self._duplicate_keys(self.root):
            return obj, False
        return obj, True

    def _duplicate_keys(self, root: Node) -> bool:
        """A key given twice in one object: json.loads keeps the last silently; we refuse."""
        found = False
        stack, budget = [root], MAX_VALUE_NODES
        while stack and budget > 0:
            node = stack.pop()
            budget -= 1
            if node.kind == "map":
                for first, again in node.duplicates():
                    found = True
                    line, col = first.source.where(first.offset())
                    line2, col2 = again.source.where(again.offset())
                    assert self.config is not None
                    self.problems.append(LintProblem(
                        again.source.path, f"{self.config.label}.{again.value}",
                        ProblemType.DUPLICATE_KEY,
                        f"key {again.value!r} is given twice (first at line {line}, column "
                        f"{col}): SGLang silently keeps the last one; radix-evict refuses it",
                        "keep one", line2, col2))
                stack.extend(v for _, v in node.items)
            elif node.kind == "seq":
                stack.extend(node.items)
        return found

    def _sglang_startup(self, name: str, obj: Any) -> list[Refusal]:
        """SGLang's own startup checks on its own policy (the verdict ``sglang check`` gives
        too), placed at the config's words; returns what it refuses (errors only)."""
        found = startup_verdict(name, obj)
        for r in found:
            if r.setting:
                self.at_setting(r.path, r.type, r.msg, r.hint, r.severity, r.key)
            else:
                self.at_config(r.path, r.type, r.msg, r.hint, r.severity, r.key)
        return [r for r in found if r.severity == ERROR]

    def _runs_in_sglang(self, name: str, obj: Any) -> None:
        """A plugin policy that fails to build fails SGLang's startup (the plugin builds it
        the same way). A stateful one runs: the plugin delivers SGLang's tree events."""
        try:
            registry.load_policy(name, obj if obj else None)
        except Exception as e:  # the plugin's factory builds it the same way, at startup
            self.at_policy("policy_failed", f"SGLang fails at startup building the {name} "
                           f"strategy: {type(e).__name__}: {e}")

    def _radix_evict(self, name: str, obj: Any, severity: str) -> bool:
        """radix-evict's strict validation: SGLang's verdict for plugin policies, else advice.

        Returns whether the config passed.
        """
        config = obj if obj or obj is None else None
        passed = True
        for p in registry.validate(name, config, extended=True):
            if p.type in NAME_PROBLEMS:
                continue
            passed = False
            msg = p.msg if severity == ERROR else (
                f"{p.msg} (SGLang {SGLANG_VERSION} runs it; radix-evict refuses it: its "
                "RadixCache, validate, and SGLang itself where radix-evict's SGLang plugin "
                "is loaded)")
            hint = _hint(name, p)
            path = tuple(p.loc) or ((p.key,) if p.key else ())
            self.at_setting(path, p.type, msg, hint, severity, key=p.type == "extra_forbidden")
        if passed:  # valid; the policy says what in it defeats the policy (never by name here)
            for w in registry.config_warnings(name, config):
                self.at_setting(w.loc, w.type, w.msg, w.hint, WARNING)
        return passed


def _not_now(p: LintProblem) -> LintProblem:
    if p.severity != ERROR:
        return p
    from dataclasses import replace

    return replace(p, severity=WARNING, msg=p.msg + (
        " (not with --disable-radix-cache, where SGLang builds no eviction strategy; it "
        "fails once the radix cache is enabled)"))


def _hint(name: str, p: ConfigProblem) -> str | None:
    if p.type == "extra_forbidden":
        keys = valid_keys_text(name, p.valid_keys)
        return f"{p.hint}; {keys}" if p.hint else keys
    return p.hint


def _find(root: Node | None, path: tuple[Any, ...], key: bool) -> Node | None:
    """The node at ``path`` in the config (its key node if ``key``), or the nearest above."""
    node = root
    if node is None:
        return None
    for i, part in enumerate(path):
        if node.kind != "map":
            return node
        pair = None
        for k, v in node.items:
            if str(k.value) == str(part):
                pair = (k, v)
        if pair is None:
            return node
        last = i == len(path) - 1
        node = pair[0] if (key and last) else pair[1]
    return node


def check(policy: Occurrence | None, config: Occurrence | None,
          overridden: Sequence[Occurrence] = (), cache_disabled: bool = False
          ) -> list[LintProblem]:
    """Every problem SGLang (errors) and radix-evict (warnings) find with this setting.

    ``overridden``: earlier occurrences of the flags. SGLang uses the last one, but its
    argument parser checks every value as it reads it (a choice, JSON), so an invalid
    overridden value still stops it.
    """
    problems: list[LintProblem] = []
    for occ in overridden:
        early = Verdict(occ if occ.flag == POLICY_FLAG else None,
                        occ if occ.flag == CONFIG_FLAG else None)
        if occ.flag == POLICY_FLAG:
            if not _opaque(occ) and occ.value.text not in native.NATIVE_CHOICES:
                early._plugin_policy(occ.value.text)
        elif not _opaque(occ):
            early._parse_config()
        problems.extend(p for p in early.problems if p.severity == ERROR)
    if policy is None and config is None:
        return problems
    return problems + Verdict(policy, config, cache_disabled).run()


def _opaque(occ: Occurrence) -> bool:
    return occ.value.node is None and is_opaque(occ.value.text)


def hicache_check(found: Mapping[str, Sequence[Occurrence]], cache_disabled: bool = False
                  ) -> list[LintProblem]:
    """SGLang's verdict on the HiCache flags (:mod:`.hicache`'s rules), placed at the words.

    Its argument parser checks every value as it reads it (a later one does not save an
    invalid earlier one); then its startup rules read the last of each.
    """
    if not any(hicache.BY_NAME[name].hicache for name in found):
        return []  # only other features' flags: nothing of HiCache's to judge
    problems: list[LintProblem] = []
    values: dict[str, Any] = {}
    for name, occurrences in found.items():
        spec = hicache.BY_NAME[name]
        for occ in occurrences:
            last = occ is occurrences[-1]
            text = occ.value.text
            if spec.switch and occ.value is occ.name:
                values[name] = True
                continue
            if occ.value.node is None and is_opaque(text):
                if last:
                    values[name] = hicache.UNKNOWN
                    problems.append(problem_at(
                        occ.value.word, 0, "not_checked",
                        f"{name} {short(text)} is filled in at deploy time (an environment "
                        "variable or command substitution); not checked", loc=occ.label,
                        severity=NOTE))
                continue
            value, refused = hicache.parse_value(spec, text)
            if refused is not None:
                problems.append(problem_at(occ.value.word, 0, refused.type, refused.msg,
                                           loc=occ.label, hint=refused.hint))
            elif last:
                values[name] = value
    if any(p.severity == ERROR for p in problems):
        return problems
    if cache_disabled:
        values[hicache.DISABLE_RADIX] = True
    for f in hicache.startup(values).findings:
        occ, word = _hicache_anchor(found, f)
        problems.append(problem_at(word, 0, f.type, f.msg, loc=occ.label, hint=f.hint,
                                   severity=f.severity))
    return problems


def _hicache_anchor(found: Mapping[str, Sequence[Occurrence]], f: hicache.Finding
                    ) -> tuple[Occurrence, Text]:
    """Where a finding goes: its flag's last occurrence (the value, or the flag when it is
    about the flag), else the value of the flag that caused it, else HiCache's switch, else
    the first HiCache flag."""
    for name in (f.flag, *f.also, hicache.ENABLE):
        if found.get(name):
            occ = found[name][-1]
            return occ, (occ.name.word if name == f.flag and not f.at_value else occ.value.word)
    occ = next(occs[0] for name, occs in found.items() if occs and hicache.BY_NAME[name].hicache)
    return occ, occ.name.word
