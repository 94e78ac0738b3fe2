"""Read SGLang's eviction flags out of an argument list exactly as SGLang 0.5.23 does.

SGLang's launchers (``prepare_server_args``) first merge ``--config FILE``
(only the separate, spelled-out token ``--config``; the file's settings go
first, so the command line wins), then parse with ``argparse`` (abbreviations
allowed: a unique prefix such as ``--radix-eviction-policy-c`` works, a
shorter one is ambiguous with the two flags; ``--flag=value`` and
``--flag value``; the last occurrence wins). This module reproduces those
rules for the two eviction flags and HiCache's flags (their table:
:mod:`.hicache`; a switch takes no value) and reports, with positions, what
SGLang refuses (errors) and what it silently does differently from what the
file seems to say (warnings).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath

from radix_evict.suggest import suggest

from . import hicache
from .model import ERROR, INVALID, NOTE, WARNING, Arg, Invocation, LintProblem
from .readers.shell import is_opaque
from .text import Text

POLICY_FLAG = "--radix-eviction-policy"
CONFIG_FLAG = "--radix-eviction-policy-config"
CONFIG_FILE_FLAG = "--config"
# Shortest unique abbreviations among SGLang 0.5.23's 561 option strings
# (tests/lint/test_lint_corpus.py checks them against SGLang's real parser).
CONFIG_FLAG_MIN_PREFIX = "--radix-eviction-policy-"
CONFIG_FILE_MIN_PREFIX = "--conf"
OTHER_RADIX_FLAGS = ("--radix-cache-backend",)
DISABLE_FLAG, DISABLE_FLAG_MIN_PREFIX = "--disable-radix-cache", "--disable-r"
NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
FLAGS = (POLICY_FLAG, CONFIG_FLAG)

# What --config FILE may contain: its keys become "--KEY" arguments.
ConfigLoader = Callable[[Text, Invocation], "list[Arg] | None"]


@dataclass
class Occurrence:
    """One eviction flag on the command line: the flag argument and its value."""

    flag: str
    name: Arg
    value: Arg
    label: str  # how the file spells it (a mapping key, or the flag as written)


@dataclass
class Resolved:
    """The policy and config SGLang ends up with (None: its default), and what was wrong."""

    policy: Occurrence | None
    config: Occurrence | None
    problems: list[LintProblem]
    # Earlier occurrences: argparse still checks each value (choices, JSON) as it reads it.
    overridden: list[Occurrence] = field(default_factory=list)
    # --disable-radix-cache: SGLang's cache then builds no eviction strategy at all.
    cache_disabled: bool = False
    # HiCache's flags and the other flags its rules read (hicache.FLAGS), by name: every
    # occurrence, the last one counting.
    hicache: dict[str, list[Occurrence]] = field(default_factory=dict)


def problem_at(word: Text, index: int, type_: str, msg: str, *, loc: str, hint: str | None = None,
               severity: str = ERROR, outcome: str = INVALID) -> LintProblem:
    line, column = word.where(index)
    return LintProblem(word.source.path, loc, type_, msg, hint, line, column, severity, outcome)


def _kind(token: str) -> tuple[str, str | None, str | None]:
    """How argparse reads ``token``: (``value`` | ``exact`` | ``abbrev`` | ``ambiguous`` |
    ``misspelt`` | ``config-file`` | ``config-file-ignored`` | ``other``, flag, explicit value)."""
    if not token or token[0] != "-" or token == "-":
        return "value", None, None
    name, eq, explicit = token.partition("=")
    value = explicit if eq else None
    if token in FLAGS or name in FLAGS:
        return "exact", name, value
    if token == CONFIG_FILE_FLAG:
        return "config-file", CONFIG_FILE_FLAG, None
    if name == CONFIG_FILE_FLAG or (len(name) >= len(CONFIG_FILE_MIN_PREFIX)
                                    and CONFIG_FILE_FLAG.startswith(name)):
        return "config-file-ignored", CONFIG_FILE_FLAG, value
    if name.startswith("--"):
        if len(name) >= len(CONFIG_FLAG_MIN_PREFIX) and CONFIG_FLAG.startswith(name):
            return "abbrev", CONFIG_FLAG, value
        if len(name) >= len("--radix") and POLICY_FLAG.startswith(name):
            return "ambiguous", None, value
        how, option, _ = hicache.classify(name)
        if how in ("exact", "abbrev"):
            return how, option, value
        if how in ("ambiguous", "unknown"):
            return "misspelt" if how == "unknown" else how, None, value
    if NEGATIVE_NUMBER.match(token) or (" " in token and not name.startswith("--radix")):
        return "value", None, None
    if " " in token:
        return "misspelt", None, value
    if any(other.startswith(name) for other in OTHER_RADIX_FLAGS):
        return "other", None, None
    low = name.lower()
    norm = low.lstrip("-").replace("_", "-")
    if norm in ("radix-eviction-policy", "radix-eviction-policy-config"):
        return "misspelt", None, value
    if ("radix" in low or "evict" in low) and _near(name):
        return "misspelt", None, value
    return "other", None, None


FLAG_CUTOFF = 0.75  # stricter than names: a flag is long, and "radix" alone is no near miss


def _near(name: str) -> str | None:
    return suggest(name.replace("_", "-"), FLAGS, cutoff=FLAG_CUTOFF)


def merge_config_file(inv: Invocation, load: ConfigLoader | None,
                      problems: list[LintProblem]) -> list[Arg]:
    """SGLang's ``--config FILE`` merge: the file's arguments, then the rest of the command."""
    args = inv.args
    at = [i for i, a in enumerate(args) if a.text == CONFIG_FILE_FLAG]
    if not at or not inv.merges_config:
        return args
    loc = f"{inv.loc} {CONFIG_FILE_FLAG}".strip()
    if len(at) > 1:
        problems.append(problem_at(args[at[1]].word, 0, "config_file",
                                   "SGLang refuses two --config files (\"Multiple config files "
                                   "specified! Only one allowed.\")", loc=loc))
        return args
    i = at[0]
    if i == len(args) - 1:
        problems.append(problem_at(args[i].word, 0, "config_file",
                                   "--config needs a file name (SGLang: \"No config file "
                                   "specified after --config flag!\")", loc=loc))
        return args
    path = args[i + 1]
    suffix = PurePath(path.text).suffix.lower()
    if suffix not in (".yaml", ".yml"):
        problems.append(problem_at(path.word, 0, "config_file",
                                   "SGLang reads only YAML config files, got "
                                   f"{suffix or 'no suffix'} (\"Config file must be YAML format\")",
                                   loc=loc))
        return args
    merged = load(path.word, inv) if load is not None else None
    return [*(merged or []), *args[:i], *args[i + 2:]]


def resolve(inv: Invocation, load: ConfigLoader | None = None) -> Resolved:
    """The eviction settings SGLang ends up with for this invocation."""
    problems: list[LintProblem] = []
    args = merge_config_file(inv, load, problems) if inv.style == "argv" else inv.args
    found: dict[str, list[Occurrence]] = {POLICY_FLAG: [], CONFIG_FLAG: []}
    hicache_found: dict[str, list[Occurrence]] = {}
    prefix = f"{inv.loc} " if inv.loc and inv.style == "argv" else ""
    i = 0
    n = len(args)
    after_dashes = disabled = False
    while i < n:
        arg = args[i]
        token = arg.text
        i += 1
        if token == "--" and not after_dashes:
            after_dashes = True
            continue
        kind, flag, explicit = _kind(token)
        if (not after_dashes and len(token) >= len(DISABLE_FLAG_MIN_PREFIX)
                and DISABLE_FLAG.startswith(token)):
            disabled = True
        if after_dashes and kind in ("exact", "abbrev"):
            problems.append(problem_at(arg.word, 0, "unknown_option",
                                       f"after '--' argparse takes {token!r} as a positional "
                                       "argument; SGLang refuses it (unrecognized arguments)",
                                       loc=prefix + token))
            continue
        if kind in ("value", "other", "config-file"):
            continue
        name = token.partition("=")[0]
        if kind in ("config-file-ignored", "ambiguous", "misspelt"):
            _not_taken(arg, kind, name, explicit, inv, prefix, problems)
            continue
        assert flag is not None
        spec = hicache.BY_OPTION.get(flag)
        if spec is not None and spec.switch:
            after = args[i] if i < n else None
            _switch(arg, name, flag, spec, explicit, after, kind, prefix, hicache_found,
                    problems)
            if inv.style == "mapping" and after is not None and is_opaque(after.text):
                hicache_found[spec.name][-1].value = after  # a templated true or false
                i += 1
            continue
        # exact or abbrev: the value is the text after '=' or the next argument
        if explicit is not None:
            cut = len(token) - len(explicit)
            value = Arg(arg.word.slice(cut), arg.node)
        elif i < n and _kind(args[i].text)[0] == "value":
            value = args[i]
            i += 1
        else:
            problems.append(problem_at(arg.word, 0, "missing_value",
                                       f"SGLang refuses {name}: expected one argument",
                                       loc=prefix + flag))
            continue
        label = arg.label if isinstance(arg, LabelledArg) else flag
        if kind == "abbrev":
            problems.append(problem_at(
                arg.word, 0, "abbreviation",
                f"{name} is an abbreviation SGLang's argparse expands to {flag}",
                loc=prefix + flag, hint=f"write {flag} in full", severity=WARNING))
        if spec is not None:
            hicache_found.setdefault(spec.name, []).append(
                Occurrence(spec.name, arg, value, prefix + label))
            continue
        found[flag].append(Occurrence(flag, arg, value, prefix + label))
    if inv.style != "mapping":  # in a mapping, a setting given twice is duplicate_setting
        _overridden([*found.items(), *hicache_found.items()], problems)
    policy = found[POLICY_FLAG][-1] if found[POLICY_FLAG] else None
    config = found[CONFIG_FLAG][-1] if found[CONFIG_FLAG] else None
    earlier = [o for occurrences in found.values() for o in occurrences[:-1]]
    return Resolved(policy, config, problems, earlier, disabled, hicache_found)


def _not_taken(arg: Arg, kind: str, name: str, explicit: str | None, inv: Invocation,
               prefix: str, problems: list[LintProblem]) -> None:
    """An option SGLang does not take as written: a ``--config`` it parses and ignores, an
    ambiguous abbreviation, or a misspelt (unknown) option."""
    token = arg.text
    if kind == "config-file-ignored":
        if inv.merges_config:
            problems.append(problem_at(
                arg.word, 0, "config_ignored",
                f"SGLang 0.5.23 does not read this config file: it merges --config FILE only "
                f"when written as the two arguments '--config' and 'FILE' ({name!r} "
                f"{'with =' if explicit is not None else 'abbreviated'} is parsed and ignored)",
                loc=prefix + CONFIG_FILE_FLAG, severity=WARNING))
        return
    if kind == "ambiguous":
        matches = hicache.classify(name)[2]
        if matches:
            could, in_full = ", ".join(matches), "the option"
        else:
            could = f"{POLICY_FLAG}, {CONFIG_FLAG}" + (
                ", --radix-cache-backend" if "--radix-cache-backend".startswith(name) else "")
            in_full = POLICY_FLAG
        problems.append(problem_at(
            arg.word, 0, "ambiguous_option",
            f"SGLang refuses {name!r}: ambiguous option, it could match {could}",
            loc=prefix + name, hint=f"write {in_full} in full"))
        return
    label = arg.label if isinstance(arg, LabelledArg) else name
    if " " in token and explicit is None:
        flag_part = token.split(" ", 1)[0]
        problems.append(problem_at(
            arg.word, 0, "unknown_option",
            f"one argument holds a flag and its value ({_cut(token)!r}); SGLang sees a "
            "single unrecognized argument and refuses to start",
            loc=prefix + flag_part,
            hint=f"split it into two list items, or write {flag_part}=VALUE"))
        return
    near = hicache.near(name) if hicache.classify(name)[0] == "unknown" else _near(name)
    hint = f"write {near}" if near else None
    problems.append(problem_at(
        arg.word, 0, "unknown_option",
        f"SGLang 0.5.23 has no option {label!r} and refuses to start "
        f"(unrecognized arguments)", loc=prefix + label, hint=hint))


def _overridden(found: list[tuple[str, list[Occurrence]]],
                problems: list[LintProblem]) -> None:
    """A warning for each setting given again later (a switch given twice is the same)."""
    for flag, occurrences in found:
        if flag in hicache.BY_NAME and hicache.BY_NAME[flag].switch:
            continue  # a switch given twice is the same switch
        for early in occurrences[:-1]:
            line, col = occurrences[-1].name.word.where(0)
            last = occurrences[-1].name.word.source.path
            problems.append(problem_at(
                early.name.word, 0, "overridden",
                f"{flag} is given again later ({last}:{line}:{col}); SGLang uses the last one",
                loc=early.label, severity=WARNING))


def _switch(arg: Arg, name: str, option: str, spec: hicache.Flag, explicit: str | None,
            after: Arg | None, kind: str, prefix: str, found: dict[str, list[Occurrence]],
            problems: list[LintProblem]) -> None:
    """A switch (``store_true``): it takes no value, so argparse refuses ``--flag=VALUE``, and
    reads a word after it as a positional argument SGLang has none of."""
    label = arg.label if isinstance(arg, LabelledArg) else option
    if explicit is not None:
        problems.append(problem_at(
            arg.word, len(name), "switch_value",
            f"SGLang refuses {name}={explicit}: {spec.name} is a switch and takes no value "
            f"(argparse: ignored explicit argument {explicit!r})", loc=prefix + label,
            hint=f"write {spec.name} alone to turn it on, or leave it out"))
        return
    if kind == "abbrev":
        problems.append(problem_at(
            arg.word, 0, "abbreviation",
            f"{name} is an abbreviation SGLang's argparse expands to {option}",
            loc=prefix + option, hint=f"write {option} in full", severity=WARNING))
    if after is not None and _kind(after.text)[0] == "value" and not is_opaque(after.text):
        problems.append(problem_at(
            after.word, 0, "switch_value",
            f"{spec.name} is a switch and takes no value: SGLang's parser reads "
            f"{_cut(after.text)!r} as an extra argument and refuses to start (unrecognized "
            "arguments)", loc=prefix + label,
            hint=f"drop {_cut(after.text)!r}; leave {spec.name} out to turn it off"))
    found.setdefault(spec.name, []).append(Occurrence(spec.name, arg, arg, prefix + label))


class LabelledArg(Arg):
    """An argument made from a mapping key: ``label`` is the key as the file spells it."""

    def __init__(self, word: Text, label: str, node: object = None) -> None:
        super().__init__(word, node)  # type: ignore[arg-type]
        self.label = label


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def not_found_note(word: Text, loc: str) -> LintProblem:
    return problem_at(word, 0, "config_not_found",
                      f"--config {word.text}: no such file here, so its settings are not "
                      "checked (SGLang reads it where the server runs)", loc=loc, severity=NOTE)


__all__ = ["CONFIG_FLAG", "POLICY_FLAG", "Occurrence", "Resolved", "resolve"]
