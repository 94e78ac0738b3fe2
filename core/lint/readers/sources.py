"""Find SGLang's arguments in each shape of file deployments put them in.

- YAML/JSON/TOML trees: argument lists (a Kubernetes container's
  ``command`` + ``args``, a compose service's ``entrypoint`` + ``command``,
  Helm-style ``extraArgs`` lists, any list holding the flags), command strings
  and block scalars (``bash -c`` scripts included), and mappings whose keys
  are SGLang's argument names (at the root of a YAML file: an SGLang
  ``--config`` file, read by SGLang's rules; deeper: a settings mapping, keys
  in any spelling);
- shell scripts (Dockerfiles: :mod:`.dockerfile`).

Each launch becomes an :class:`Invocation`: SGLang's arguments after the
launcher (``python -m sglang.launch_server``, ``sglang serve``...), or the
whole list when no launcher is named (``args:`` alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from .. import hicache
from ..argv import CONFIG_FLAG, POLICY_FLAG, LabelledArg, problem_at
from ..model import Arg, Invocation, LintProblem
from ..text import Text
from .nodes import LimitExceeded, Node
from .shell import is_opaque, split_commands

# Launchers that parse SGLang's server arguments; True: through prepare_server_args,
# which merges --config FILE.
MODULES = {
    "sglang.launch_server": True,
    "sglang_router.launch_server": False,
    "sglang.bench_one_batch_server": False,
    "sglang.bench_one_batch": False,
    "sglang.bench_offline_throughput": False,
    "sglang.benchmark.one_batch": False,
    "sglang.benchmark.offline_throughput": False,
    "sglang.compile_deep_gemm": False,
}
# vLLM's launchers (its arguments follow); none merges SGLang's --config.
VLLM_MODULES = {"vllm.entrypoints.openai.api_server": 0, "vllm.entrypoints.cli.main": 1}
VLLM_SERVE = "vllm serve"
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
MENTION = re.compile(r"--(?:radix|conf|kv[-_]transfer[-_]config|hi|enable[-_]hi)", re.IGNORECASE)
# Mapping keys (any spelling) that name SGLang's settings: the eviction flags and HiCache's.
SETTING_KEYS = {"radix-eviction-policy": POLICY_FLAG, "radix-eviction-policy-config": CONFIG_FLAG,
                **{o[2:]: hicache.BY_OPTION[o].name for o in hicache.HICACHE_OPTIONS}}
SETTING_INITIALS = frozenset(c for k in SETTING_KEYS for c in (k[0], k[0].upper()))
VLLM_KV_KEY = "kv-transfer-config"  # a mapping key naming vLLM's --kv-transfer-config


def normalize_key(key: Any) -> str:
    """``--radix_eviction_policy`` -> ``radix-eviction-policy``: a mapping may spell it any way."""
    return str(key).lstrip("-").replace("_", "-").lower()


COMMAND_KEYS = frozenset({"args", "command", "entrypoint"})


def is_setting_key(key: Node) -> bool:
    """Whether a mapping key names one of SGLang's two eviction settings (any spelling)."""
    raw = key.raw
    return (key.kind == "scalar" and raw is not None
            and raw.lstrip("-")[:1] in SETTING_INITIALS
            and normalize_key(raw) in SETTING_KEYS)


def is_kv_flag(token: str) -> bool:
    """``--kv-transfer-config`` as vLLM's parser reads a flag (underscores before the first
    ``.`` are dashes; ``=VALUE`` and ``.key`` forms too)."""
    return (token[:2] == "--" and normalize_key(token.partition("=")[0].partition(".")[0])
            == VLLM_KV_KEY)


def mentions(text: str) -> bool:
    return MENTION.search(text) is not None


def dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _shell_script_at(words: list[Arg]) -> int | None:
    """Index of the script in ``sh -c SCRIPT`` (also ``bash -lc``, ``/bin/sh -ec``)."""
    for i, w in enumerate(words[:-2] if len(words) > 2 else words[:-1]):
        if _base(w.text) in SHELLS:
            j = i + 1
            while j < len(words) and words[j].text.startswith("-"):
                flag = words[j].text
                if not flag.startswith("--") and "c" in flag[1:]:
                    return j + 1 if j + 1 < len(words) else None
                j += 1
            return None
    return None


def launcher(words: list[Arg]) -> tuple[int, str | None, bool]:
    """Where SGLang's arguments start, which launcher, and whether it merges --config."""
    for i, w in enumerate(words):
        t = w.text
        if t == "-m" and i + 1 < len(words) and words[i + 1].text in MODULES:
            mod = words[i + 1].text
            return i + 2, mod, MODULES[mod]
        if t.startswith("-m") and t[2:] in MODULES:
            return i + 1, t[2:], MODULES[t[2:]]
        if _base(t) == "sglang" and i + 1 < len(words) and words[i + 1].text == "serve":
            return i + 2, "sglang serve", True
        module = words[i + 1].text if t == "-m" and i + 1 < len(words) else t[2:]
        if t.startswith("-m") and module in VLLM_MODULES:
            skip = VLLM_MODULES[module] + (2 if t == "-m" else 1)  # cli.main: its "serve"
            return i + skip, module, False
        if _base(t) == "vllm" and i + 1 < len(words) and words[i + 1].text == "serve":
            return i + 2, VLLM_SERVE, False
    return 0, None, True


def is_vllm_launcher(name: str | None) -> bool:
    return name == VLLM_SERVE or name in VLLM_MODULES


def from_words(words: list[Arg], loc: str, base_dir: str, depth: int = 0) -> Iterator[Invocation]:
    """The invocations in one argument vector (a list, or a command's words)."""
    if not words or depth > 8:
        return
    script = _shell_script_at(words)
    if script is not None and script < len(words) and mentions(words[script].text):
        yield from from_script(words[script].word, loc, base_dir, depth + 1)
        return
    start, name, merges = launcher(words)
    args = words[start:]
    if name is None and not any(mentions(a.text) for a in args):
        return
    vllm = is_vllm_launcher(name) or (name is None and any(is_kv_flag(a.text) for a in args))
    yield Invocation(args, loc, "argv", name, merges, base_dir, "vllm" if vllm else "sglang")


def from_script(script: Text, loc: str, base_dir: str, depth: int = 0) -> Iterator[Invocation]:
    """The invocations in shell text: each command that launches SGLang or names its flags."""
    for words in split_commands(script):
        if not any(mentions(w.text) for w in words):
            continue
        yield from from_words([Arg(w) for w in words], loc, base_dir, depth)


# --------------------------------------------------------------------- trees


def scalar_arg(node: Node) -> Arg:
    return Arg(node.text())


def _argv_of(node: Node, shell_split: bool) -> list[Arg] | None:
    """A list of scalars as arguments; a string as its shell words (``shell_split``)."""
    if node.kind == "seq":
        if not all(n.kind == "scalar" for n in node.items):
            return None
        return [Arg(n.text()) if isinstance(n.value, str) else
                Arg(Text.at(json.dumps(n.value), n.source, n.offset())) for n in node.items]
    if node.kind == "scalar" and isinstance(node.value, str) and shell_split:
        commands = split_commands(node.text())
        return [Arg(w) for cmd in commands[:1] for w in cmd] if len(commands) == 1 else None
    return None


class TreeWalker:
    """Walks one document tree; aliases are visited once, so shared subtrees cost nothing."""

    def __init__(self, base_dir: str, config_file_root: bool) -> None:
        self.base_dir = base_dir
        self.config_file_root = config_file_root
        self.problems: list[LintProblem] = []
        self.invocations: list[Invocation] = []
        self._seen: set[int] = set()

    def walk(self, root: Node | None, prefix: tuple[Any, ...] = ()) -> None:
        if root is None:
            return
        stack: list[tuple[Node, tuple[Any, ...]]] = [(root, prefix)]
        while stack:
            node, path = stack.pop()
            if node.kind == "scalar":
                if node.raw and mentions(node.raw) and isinstance(node.value, str):
                    self.invocations.extend(from_script(node.text(), dotted(path), self.base_dir))
                continue
            if id(node) in self._seen:
                continue
            self._seen.add(id(node))
            children: list[tuple[Node, tuple[Any, ...]]] = []
            if node.kind == "seq":
                named = any(n.raw and mentions(n.raw) for n in node.items if n.kind == "scalar")
                argv = _argv_of(node, False) if named else None
                if argv is not None and any(mentions(a.text) for a in argv):
                    self.invocations.extend(from_words(argv, dotted(path), self.base_dir))
                    continue
                children = [(n, (*path, i)) for i, n in enumerate(node.items)]
            else:
                consumed = self._mapping(node, path, root_level=node is root and not prefix)
                children = [(v, (*path, str(k.value))) for k, v in node.items
                            if id(v) not in consumed]
            stack.extend(reversed(children))

    def _mapping(self, node: Node, path: tuple[Any, ...], root_level: bool) -> set[int]:
        """Settings keys and container commands in one mapping; returns the value nodes used."""
        consumed: set[int] = set()
        kv = [(k, v) for k, v in node.items if k.kind == "scalar" and k.raw is not None
              and normalize_key(k.raw) == VLLM_KV_KEY]
        if kv:
            consumed |= {id(v) for _, v in kv}
            self._vllm_settings(kv, path)
        settings = [(k, v) for k, v in node.items if is_setting_key(k)]
        if settings:
            consumed |= {id(v) for _, v in settings}
            self._settings(node, settings, path, root_level and self.config_file_root)
        keys = {k.raw: v for k, v in node.items if k.raw in COMMAND_KEYS}
        if keys:
            first, second = (("command", "args") if "args" in keys else ("entrypoint", "command"))
            parts = [(name, keys[name]) for name in (first, second) if name in keys]
            argvs = [(name, _argv_of(v, True)) for name, v in parts]
            if all(a is not None for _, a in argvs) and any(
                    mentions(a.text) for _, argv in argvs for a in argv or []):
                words = [a for _, argv in argvs for a in argv or []]
                where = dotted((*path, "+".join(name for name, _ in parts)))
                self.invocations.extend(from_words(words, where, self.base_dir))
                consumed |= {id(v) for _, v in parts}
        return consumed

    def _settings(self, node: Node, settings: list[tuple[Node, Node]], path: tuple[Any, ...],
                  config_file: bool) -> None:
        """A mapping with SGLang's setting keys: arguments as SGLang's --config merge makes them."""
        by_flag: dict[str, list[Node]] = {}
        for k, _ in settings:
            by_flag.setdefault(SETTING_KEYS[normalize_key(k.value)], []).append(k)
        for flag, keys in by_flag.items():
            for k in keys[1:]:
                first = keys[0]
                line, col = first.source.where(first.offset())
                same = "repeated" if k.value == first.value else f"spelled {first.value!r} and"
                self.problems.append(problem_at(
                    k.text(), 0, "duplicate_setting",
                    f"{flag[2:]} is set twice in one mapping ({same} {k.value!r}; the first at "
                    f"line {line}, column {col}): tools disagree on which one counts",
                    loc=dotted((*path, str(k.value))), hint="keep one"))
        args: list[Arg] = []
        for k, v in _as_loaded(settings) if config_file else settings:
            label = dotted((*path, str(k.value)))
            key = str(k.value)
            name = f"--{key}" if config_file else SETTING_KEYS[normalize_key(key)]
            flag_word = Text(name, k.source, [(0, k.offset())])
            spec = hicache.BY_NAME.get(SETTING_KEYS[normalize_key(key)])
            if spec is not None and spec.switch:
                on = self._switch(v, key, label, spec, config_file)
                if on is not None:
                    if on:
                        args.append(LabelledArg(flag_word, label))
                    continue
            values = self._values(v, flag_word, label, config_file, spec is not None)
            if values is None:
                continue
            if not values:  # an empty list: SGLang's merge adds nothing
                continue
            args.append(LabelledArg(flag_word, label))
            args.extend(values)
        if config_file and args:  # the other switches and values the rules read
            for read in hicache.FLAGS:
                other = node.get(read.name[2:]) if not read.hicache else None
                if other is None or other.kind != "scalar":
                    continue
                word = Text.at(read.name, other.source, other.offset())
                if read.switch and other.value is True:  # SGLang's merge writes the flag
                    args.append(Arg(word))
                elif not read.switch and isinstance(other.value, str):
                    args += [Arg(word), Arg(other.text())]
        if args or config_file:
            style = "config-file" if config_file else "mapping"
            self.invocations.append(Invocation(args, dotted(path), style, None, False,
                                               self.base_dir))

    def _vllm_settings(self, kv: list[tuple[Node, Node]], path: tuple[Any, ...]) -> None:
        """A mapping holding vLLM's ``kv-transfer-config`` (a vLLM ``--config`` YAML, Helm
        values): the argument vLLM makes of it, an object or its JSON text."""
        args: list[Arg] = []
        for k, v in kv:
            label = dotted((*path, str(k.value)))
            flag_word = Text("--" + VLLM_KV_KEY, k.source, [(0, k.offset())])
            if v.kind == "map":
                from .nodes import to_python

                try:
                    value = Arg(Text.at(json.dumps(to_python(v)), v.source, v.offset()), node=v)
                except LimitExceeded as exc:
                    raise LimitExceeded(exc.kind, exc.msg, v.offset()) from None
            elif v.kind == "scalar" and isinstance(v.value, str):
                value = Arg(v.text())
            else:
                self.problems.append(problem_at(
                    Text.at("", v.source, v.offset()), 0, "config_type",
                    "vLLM's kv-transfer-config must be a JSON object or its text", loc=label))
                continue
            args += [LabelledArg(flag_word, label), value]
        if args:
            self.invocations.append(Invocation(args, dotted(path), "mapping", None, False,
                                               self.base_dir, "vllm"))

    def _switch(self, v: Node, key: str, label: str, spec: hicache.Flag,
                config_file: bool) -> bool | None:
        """A switch's key: whether the flag is on (None: SGLang's merge writes ``--KEY VALUE``,
        read as any value is). SGLang's merge writes ``true`` as the flag alone and ``false``
        as nothing, for a key that names the switch (dashes or underscores); a settings
        mapping may also say ``"true"``."""
        value = v.value if v.kind == "scalar" else None
        if config_file:
            names = {spec.field, *(o[2:].replace("-", "_") for o in spec.options)}
            if isinstance(value, bool) and key.replace("-", "_") in names:
                return value
            return None
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if isinstance(value, str) and is_opaque(value):
            return None  # filled in at deploy time: the flag and its value, a note

        if isinstance(value, bool) or (value is None and v.kind == "scalar"):
            return bool(value)
        self.problems.append(problem_at(
            Text.at("", v.source, v.offset()), 0, "config_type",
            f"{spec.name} is a switch: write true or false", loc=label))
        return False

    def _values(self, v: Node, flag: Text, label: str, config_file: bool,
                is_hicache: bool = False) -> list[Arg] | None:
        """The value arguments SGLang's --config merge writes for this value (None: refused)."""
        is_policy = flag.text == POLICY_FLAG or normalize_key(flag.text) == "radix-eviction-policy"
        if is_hicache and not config_file and v.kind != "scalar":
            self.problems.append(problem_at(
                Text.at("", v.source, v.offset()), 0, "config_type",
                f"{SETTING_KEYS[normalize_key(flag.text)]} takes a single value", loc=label))
            return None
        if v.kind == "map":
            from .nodes import to_python

            try:
                text = json.dumps(to_python(v))
            except LimitExceeded as exc:  # place it at the value that expands, not deep inside
                raise LimitExceeded(exc.kind, exc.msg, v.offset()) from None
            except (TypeError, ValueError) as exc:
                self.problems.append(problem_at(
                    Text.at("", v.source, v.offset()), 0, "config_type",
                    f"SGLang cannot pass this mapping on as JSON ({exc})", loc=label))
                return None
            if is_policy and not config_file:
                self.problems.append(self._type_problem(v, label, True))
                return None
            return [Arg(Text.at(text, v.source, v.offset()), node=v)]
        if v.kind == "seq":
            if not config_file:
                self.problems.append(self._type_problem(v, label, is_policy))
                return None
            if len(v.items) > 1:
                self.problems.append(problem_at(
                    Text.at("", v.source, v.offset()), 0, "config_type",
                    f"SGLang's --config merge writes this list as {len(v.items)} separate "
                    "arguments; it takes one value, so SGLang refuses the rest (unrecognized "
                    "arguments)", loc=label, hint="write a single value"))
                return None
            return [Arg(Text.at(str(to_python_scalar(n)), n.source, n.offset()))
                    if n.kind != "scalar" or not isinstance(n.value, str) else Arg(n.text())
                    for n in v.items]
        value = v.value
        if is_policy and not isinstance(value, str):
            self.problems.append(self._type_problem(v, label, True))
            return None
        if config_file:
            if isinstance(value, bool):
                return [Arg(Text.at(str(value).lower(), v.source, v.offset()))]
            return [Arg(v.text()) if isinstance(value, str)
                    else Arg(Text.at(str(value), v.source, v.offset()))]
        if value is None:
            return None
        if is_hicache and not isinstance(value, str):  # a number, as the chart writes it
            text = str(value).lower() if isinstance(value, bool) else str(value)
            return [Arg(Text.at(text, v.source, v.offset()))]
        if not isinstance(value, str):
            self.problems.append(self._type_problem(v, label, is_policy))
            return None
        return [Arg(v.text())]

    @staticmethod
    def _type_problem(v: Node, label: str, is_policy: bool) -> LintProblem:
        from radix_evict.policies.registry import registry

        from .nodes import short, to_python

        try:
            shown = short(to_python(v))
        except LimitExceeded:
            shown = "(a large aliased value)"
        word = Text.at("", v.source, v.offset())
        if is_policy:
            return problem_at(word, 0, "policy_type",
                              f"must be a policy name (a string), got {shown}", loc=label,
                              hint="choices: " + ", ".join(registry.choices()))
        return problem_at(word, 0, "config_type",
                          f"must be a JSON object string or a mapping, got {shown}", loc=label)


def to_python_scalar(node: Node) -> Any:
    from .nodes import to_python

    return to_python(node)


def _as_loaded(settings: list[tuple[Node, Node]]) -> list[tuple[Node, Node]]:
    """What ``yaml.safe_load`` keeps of repeated keys: the first key's place, the last value."""
    out: dict[Any, tuple[Node, Node]] = {}
    for k, v in settings:
        out[k.value] = (out[k.value][0], v) if k.value in out else (k, v)
    return list(out.values())
