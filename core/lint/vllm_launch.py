"""vLLM 0.33.0's verdict on a launch's CPU offload policy, placed at the words of the file.

vLLM's argument parser (``FlexibleArgumentParser``) reads ``--kv-transfer-config`` as
JSON (``--kv_transfer_config`` too: underscores before the first ``.`` are dashes;
``=VALUE`` or the next argument; the last one wins, every one is parsed). The offload
connector (``kv_connector`` ``OffloadingConnector``, or ``--kv-offloading-size`` with the
native backend, which sets it and ``cpu_bytes_to_use``) builds its CPU tier's cache policy
from ``kv_connector_extra_config``: what that decides is
:func:`radix_evict.vllm.verdict.offload_verdict`, shared with ``radix-evict vllm check``.
A launch with another connector, or none, runs no cache policy and is not judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from radix_evict.errors import ProblemType
from radix_evict.vllm import names
from radix_evict.vllm.check import effective_extra
from radix_evict.vllm.tier import SIZE_KEY, tier_size_problem
from radix_evict.vllm.verdict import offload_verdict

from .argv import LabelledArg, problem_at
from .model import ERROR, INVALID, NOTE, WARNING, Arg, Invocation, LintProblem
from .readers.json_tree import parse_json
from .readers.nodes import LimitExceeded, Node, ParseFailure, short
from .readers.shell import is_opaque
from .readers.sources import VLLM_KV_KEY, normalize_key
from .verdict import _find

KV_FLAG = "--" + VLLM_KV_KEY
SIZE_FLAG, BACKEND_FLAG = "--kv-offloading-size", "--kv-offloading-backend"
EXTRA = "kv_connector_extra_config"
SEVERITIES = {"error": ERROR, "warning": WARNING, "note": NOTE}


@dataclass
class _Given:
    """One ``--kv-transfer-config`` on the command line, and its JSON as vLLM reads it."""

    name: Arg
    value: Arg
    label: str
    obj: Any = None
    root: Node | None = None  # the JSON with positions, when it has them


def _flag(token: str) -> tuple[str | None, str | None]:
    """(the flag vLLM's parser sees, its ``=VALUE``) for the flags read here, else (None, None)."""
    if token[:2] != "--":
        return None, None
    name, eq, value = token.partition("=")
    flag = "--" + normalize_key(name)
    return (flag, value if eq else None) if flag in (KV_FLAG, SIZE_FLAG, BACKEND_FLAG) else (
        None, None)


def vllm_problems(inv: Invocation) -> list[LintProblem]:
    """Every problem vLLM 0.33.0 finds with this launch's offload policy setting."""
    prefix = f"{inv.loc} " if inv.loc and inv.style == "argv" else ""
    problems: list[LintProblem] = []
    given: list[_Given] = []
    size = backend = None
    args, i = inv.args, 0
    while i < len(args):
        arg = args[i]
        i += 1
        flag, explicit = _flag(arg.text)
        if flag is None:
            continue
        label = arg.label if isinstance(arg, LabelledArg) else prefix + flag
        if explicit is not None:
            value = Arg(arg.word.slice(len(arg.text) - len(explicit)), arg.node)
        elif i < len(args) and not args[i].text.startswith("--"):
            value = args[i]
            i += 1
        else:
            problems.append(problem_at(arg.word, 0, "missing_value",
                                       f"vLLM refuses {flag}: expected one argument", loc=label))
            continue
        if flag == SIZE_FLAG:
            size = value
        elif flag == BACKEND_FLAG:
            backend = value
        else:
            given.append(_Given(arg, value, label))
    for early in given[:-1]:
        last = given[-1].name.word
        line, col = last.where(0)
        problems.append(problem_at(early.name.word, 0, "overridden",
                                   f"{KV_FLAG} is given again later ({last.source.path}:{line}:"
                                   f"{col}); vLLM uses the last one", loc=early.label,
                                   severity=WARNING))
    for g in given:  # argparse parses each one as it reads it
        if _opaque(g, problems) or not _parse(g, problems):
            return problems
    native = size is not None and (backend is None or backend.text == "native")
    if given:
        problems += _judge(given[-1], native)
    return problems


def _opaque(g: _Given, problems: list[LintProblem]) -> bool:
    if g.value.node is None and is_opaque(g.value.text):
        problems.append(problem_at(g.value.word, 0, "not_checked",
                                   f"{KV_FLAG} {short(g.value.text)} is filled in at deploy "
                                   "time (an environment variable or command substitution); "
                                   "not checked", loc=g.label, severity=NOTE))
        return True
    return False


def _parse(g: _Given, problems: list[LintProblem]) -> bool:
    """The JSON vLLM's parser makes of the value; reports why it refuses it."""
    text = g.value.text
    try:
        g.obj = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(problem_at(
            g.value.word, min(exc.pos, max(len(text) - 1, 0)), ProblemType.JSON_INVALID,
            f"vLLM refuses it: {KV_FLAG} is not valid JSON ({exc.msg} at column {exc.colno})",
            loc=g.label, hint=f"write a JSON object, e.g. {KV_FLAG} "
                              f"'{{\"kv_connector\": \"{names.CONNECTOR}\"}}'"))
        return False
    except RecursionError:
        problems.append(problem_at(g.value.word, 0, "too_deep", "the JSON is nested too deeply",
                                   loc=g.label))
        return False
    if g.value.node is not None:
        g.root = g.value.node
    else:
        try:
            g.root = parse_json(text, g.value.word.source, parent=g.value.word)
        except (ParseFailure, LimitExceeded):
            g.root = None
    return True


def _at(g: _Given, path: tuple[Any, ...], type_: str, msg: str, hint: str | None = None,
        severity: str = ERROR, key: bool = False) -> LintProblem:
    """A problem at the JSON key or value ``path`` is about (the nearest one given)."""
    label = g.label + "".join(f".{p}" for p in path)
    node = _find(g.root, path, key)
    if node is None:
        return problem_at(g.value.word, 0, type_, msg, loc=label, hint=hint, severity=severity)
    line, column = node.source.where(node.offset())
    return LintProblem(node.source.path, label, type_, msg, hint, line, column, severity, INVALID)


def _judge(g: _Given, native: bool) -> list[LintProblem]:
    obj = g.obj
    if not isinstance(obj, dict):
        return [_at(g, (), "config_type", f"vLLM refuses it: {KV_FLAG} must be a JSON object, "
                    f"got {type(obj).__name__}")]
    if obj.get("kv_connector") != names.CONNECTOR and not native:
        return []  # another connector, or none: no CPU tier, no cache policy
    try:
        extra = effective_extra(obj, {})
    except ValueError as e:
        return [_at(g, (EXTRA,), "config_type", f"vLLM refuses it: {e}")]
    if not extra.get(SIZE_KEY) and not native:
        return [_at(g, (EXTRA,) if EXTRA in obj else ("kv_connector",), "cpu_bytes_missing",
                    "vLLM fails at startup: cpu_bytes_to_use must be specified in "
                    f"{EXTRA}", hint=f"or launch with {SIZE_FLAG} GIB")]
    size_problem = None if native else tier_size_problem(extra.get(SIZE_KEY))
    if size_problem is not None:
        return [_at(g, (EXTRA, SIZE_KEY), "cpu_bytes_invalid", size_problem)]
    policy, module = extra.get(names.EVICTION_POLICY_KEY), extra.get(names.MODULE_PATH_KEY)
    for key, value in ((names.EVICTION_POLICY_KEY, policy), (names.MODULE_PATH_KEY, module)):
        if value is not None and not isinstance(value, str):
            return [_at(g, (EXTRA, key), "policy_type", f"{key} must be a string, got "
                        f"{short(value)}")]
        if isinstance(value, str) and is_opaque(value):
            return [_at(g, (EXTRA, key), "not_checked", f"{key} {short(value)} is filled in "
                        "at deploy time; not checked", severity=NOTE)]
    others = [k for k in extra if k != names.CONFIG_KEY]
    out = []
    for f in offload_verdict(policy, module, extra.get(names.CONFIG_KEY), extra_keys=others):
        about = (EXTRA, f.about, *f.path) if f.about in extra else (EXTRA,)
        msg = f.msg if f.severity != ERROR else f"vLLM fails at startup building the cache " \
            f"policy: {f.msg}"
        out.append(_at(g, about, f.type, msg, f.hint, SEVERITIES[f.severity], f.key))
    return out
