"""The lint corpus, checked two ways: by ``radix-evict lint`` and by SGLang 0.5.23 itself.

SGLang's side runs its own code on the argument vector lint finds in each file
(``--config`` files through SGLang's own merge): ``prepare_server_args`` (its
argparse parser and the ``--config`` YAML merge), the server-argument hooks
``handle_hicache_ratio_default``, ``handle_hicache`` and
``handle_cache_compatibility``, ``get_eviction_strategy``, the default (Rust)
tree core's constructor, and a first ``get_priority`` (the first eviction). A
file is refused when any of them raises. lint must fail exactly those files,
apart from the ``stricter/`` ones, which SGLang accepts and lint refuses on
purpose.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.sglang_env import import_sglang

from radix_evict.lint import lint_paths
from radix_evict.lint.engine import invocations_of
from radix_evict.lint.model import Invocation

CORPUS = Path(__file__).resolve().parent / "lint_corpus"
VERDICTS = {"valid": False, "invalid": True, "stricter": False}
FILES = sorted(p for folder in VERDICTS for p in (CORPUS / folder).iterdir() if p.is_file())
pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_lint_verdict(path: Path) -> None:
    report = lint_paths([path])
    errors = [str(p) for p in report.problems if report.failing(p)]
    expected = path.parent.name in ("invalid", "stricter")
    assert bool(errors) == expected, errors or "lint found no error"
    assert all(p.line is not None for p in report.problems), report.problems


def sglang_argv(inv: Invocation, path: Path) -> list[str]:
    """The arguments SGLang's launcher gets for this invocation (files as absolute paths)."""
    if inv.style == "config-file":
        return ["--config", str(path.resolve())]
    args = [a.text for a in inv.args]
    if inv.launcher == "sglang serve" and args and not args[0].startswith("-"):
        args = ["--model-path", *args]  # sglang serve MODEL: what its CLI does first
    out = []
    for i, a in enumerate(args):
        if i and args[i - 1] == "--config" and not os.path.isabs(a):
            a = str((path.parent / a).resolve())
        out.append(a)
    return out


def sglang_refusal(argv: list[str]) -> str | None:
    """Why SGLang 0.5.23 would not run with these arguments (None: it would)."""
    import_sglang()
    from sglang.srt.arg_groups.hicache_hook import handle_hicache, handle_hicache_ratio_default
    from sglang.srt.arg_groups.kv_cache_hook import handle_cache_compatibility
    from sglang.srt.mem_cache.utils import get_eviction_strategy
    from sglang.srt.server_args import prepare_server_args

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            server_args = prepare_server_args(["--model-path", "dummy", *argv])
    except SystemExit:
        return "argument parser: " + (err.getvalue().strip().splitlines() or ["exit"])[-1]
    except Exception as exc:  # the --config merge raises ValueError
        return f"--config merge: {type(exc).__name__}: {exc}"
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    policy = server_args.radix_eviction_policy
    config = server_args.radix_eviction_policy_config
    # its pipeline's order (arg_groups/pipeline.py): HiCache's ratio default (which checks the
    # host memory fraction), HiCache's resolution, then the cache compatibility check
    for stage, hook in (("HiCache ratio default", handle_hicache_ratio_default),
                        ("HiCache resolution", handle_hicache),
                        ("server-argument check", handle_cache_compatibility)):
        try:
            hook(server_args)
        except Exception as exc:
            return f"{stage}: {type(exc).__name__}: {exc}"
    if server_args.disable_radix_cache:
        # As UnifiedRadixCache does: a disabled tree builds no strategy from the config
        # (unified_radix_cache.py replaces it with lru and no config).
        return None
    try:
        strategy = get_eviction_strategy(policy, config)
    except Exception as exc:
        return f"get_eviction_strategy: {type(exc).__name__}: {exc}"
    try:
        rust_core(policy, strategy)
    except Exception as exc:
        return f"Rust tree core: {type(exc).__name__}: {exc}"
    node = SimpleNamespace(hit_count=0, last_access_time=1.0, creation_time=1, priority=0,
                           key=[1, 2], _tlru_history_len=4, _tlru_cached_prefix_len=4)
    try:
        strategy.get_priority(node)
    except Exception as exc:
        return f"first eviction: {type(exc).__name__}: {exc}"
    return None


def rust_core(policy: str, strategy: Any) -> None:
    """What SGLang's Rust tree-core adapter does with the strategy before building the core."""
    import sys

    from sglang.srt.mem_cache.rust_tree_core import mem_cache as bindings
    from sglang.srt.mem_cache.rust_tree_core.adapter import _tlru_float_config

    budget, float_config = 0, None
    if policy.lower() == "tlru":
        t, e = strategy.threshold, strategy.next_prompt_estimate
        if isinstance(t, int) and isinstance(e, int):
            budget = min(max(t - e, 0), 2 * sys.maxsize + 1)
        else:
            float_config = _tlru_float_config(bindings, t, e)
    bindings.TreeCoreInitParamsBinding(
        eviction_policy=policy, device="cpu",
        slru_protected_threshold=getattr(strategy, "protected_threshold", 2),
        tlru_tail_budget=budget, tlru_float_config=float_config)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_sglang_agrees(path: Path) -> None:
    refusals = [(inv.loc, r) for inv in invocations_of(path)
                if (r := sglang_refusal(sglang_argv(inv, path))) is not None]
    lint_refuses = not lint_paths([path]).ok
    sglang_refuses = bool(refusals)
    assert sglang_refuses == VERDICTS[path.parent.name], refusals or "SGLang starts with it"
    if path.parent.name != "stricter":
        assert lint_refuses == sglang_refuses, refusals


def test_corpus_covers_every_shape() -> None:
    shapes = {p.parent.name: set() for p in FILES}
    for p in FILES:
        for inv in invocations_of(p):
            shapes[p.parent.name].add(inv.style)
    assert {"argv", "config-file", "mapping"} <= shapes["valid"]
    assert {"argv", "config-file", "mapping"} <= shapes["invalid"]
    names = {p.name for p in FILES}
    for needed in ("Dockerfile", "shell-form.Dockerfile", "launch.sh", "compose.yaml",
                   "k8s-statefulset-bash-c.yaml", "settings.toml"):
        assert needed in names


def test_sglang_abbreviation_facts() -> None:
    """lint_argv's abbreviation constants are the shortest unique prefixes in SGLang's parser."""
    import argparse

    import_sglang()
    from sglang.srt.server_args import ServerArgs

    from radix_evict.lint import argv as lint_argv

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    options = [o for a in parser._actions for o in a.option_strings]

    def shortest_unique(flag: str) -> str:
        return next(flag[:n] for n in range(3, len(flag) + 1)
                    if [o for o in options if o.startswith(flag[:n])] == [flag])

    assert shortest_unique(lint_argv.CONFIG_FILE_FLAG) == lint_argv.CONFIG_FILE_MIN_PREFIX
    assert shortest_unique(lint_argv.CONFIG_FLAG) == lint_argv.CONFIG_FLAG_MIN_PREFIX
    radix = sorted(o for o in options if o.startswith("--radix"))
    assert radix == sorted([lint_argv.POLICY_FLAG, lint_argv.CONFIG_FLAG,
                            *lint_argv.OTHER_RADIX_FLAGS])
    policy_action = next(a for a in parser._actions if lint_argv.POLICY_FLAG in a.option_strings)
    from radix_evict.sglang.native import NATIVE_CHOICES as SGLANG_CHOICES

    assert list(policy_action.choices) == list(SGLANG_CHOICES)
