"""HiCache's flags (radix_evict.lint.hicache) against SGLang 0.5.23's own parser and hooks.

The flag table must be SGLang's (names, aliases, types, choices, defaults, the options
sharing HiCache's stems); the startup rules must refuse exactly what SGLang's
server-argument hooks refuse and predict the write policy, io backend and layout SGLang
resolves, over every combination of the values they read. Plus how lint reads the flags
in each shape of file, and the host-pool rules SGLang's hooks do not run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.sglang_env import import_sglang

from radix_evict.lint import hicache, lint_text
from radix_evict.sglang.check import host_pool

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


@pytest.fixture(scope="module")
def sglang_parser() -> argparse.ArgumentParser:
    import_sglang()
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """SGLang's hooks log their rewrites; keep the test output to the test's."""
    was = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(was)


def sglang_resolves(parser: argparse.ArgumentParser, argv: list[str]
                    ) -> tuple[str | None, dict[str, Any]]:
    """SGLang's own verdict: its parser, then its hooks in its pipeline's order; the
    refusal (None: it starts) and the HiCache values it resolved."""
    from sglang.srt.arg_groups.hicache_hook import handle_hicache, handle_hicache_ratio_default
    from sglang.srt.arg_groups.kv_cache_hook import handle_cache_compatibility
    from sglang.srt.arg_groups.overrides import resolution_result
    from sglang.srt.server_args import ServerArgs

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            raw = parser.parse_args(["--model-path", "m", *argv])
    except SystemExit:
        return "parser: " + err.getvalue().strip().splitlines()[-1], {}
    record = ServerArgs.from_cli_args(raw)
    try:
        with quiet():
            for hook in (handle_hicache_ratio_default, handle_hicache,
                         handle_cache_compatibility):
                hook(record)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}", {}
    return None, {f.name: resolution_result(record, f.field) for f in hicache.FLAGS
                  if f.hicache}


def lint_resolves(argv: list[str]) -> hicache.Outcome:
    """hicache.startup on the values argv sets (as lint's verdict passes them)."""
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        spec = hicache.BY_OPTION[argv[i]]
        if spec.switch:
            values[spec.name] = True
            i += 1
            continue
        value, refused = hicache.parse_value(spec, argv[i + 1])
        assert refused is None, refused
        values[spec.name] = value
        i += 2
    return hicache.startup(values)


# ------------------------------------------------------------------ the flag table


def test_flag_table_is_sglangs(sglang_parser: argparse.ArgumentParser) -> None:
    actions = {o: a for a in sglang_parser._actions for o in a.option_strings}
    for flag in hicache.FLAGS:
        action = actions[flag.name]
        assert tuple(action.option_strings) == flag.options, flag.name
        assert action.dest == flag.field and action.default == flag.default, flag.name
        if flag.switch:
            assert isinstance(action, argparse._StoreTrueAction), flag.name
        else:
            assert action.type is {"float": float, "int": int, "str": str}[flag.type], flag.name
            assert tuple(action.choices or ()) == flag.choices, flag.name
    options = list(actions)
    assert sorted(o for o in options if o.startswith(hicache.STEMS)) == sorted(
        hicache.STEM_OPTIONS)
    assert sorted(o for o in options if "hicache" in o or "hierarchical" in o) == sorted(
        [*hicache.HICACHE_OPTIONS, "--hierarchical-sparse-attention-extra-config"])


@pytest.mark.parametrize("token", [
    "--enable-hie", "--enable-hic", "--enable-hi", "--enable-h", "--hicache-r", "--hicache-s",
    "--hicache-si", "--hicache-w", "--hicache-host-memory-m", "--hicache-host-memory",
    "--hicache-storage-backend", "--hicache-storage-backend-e", "--hi", "--hisparse",
    "--hicache-write-polcy", "--hicache_ratio", "--enable_hierarchical_cache",
])
def test_classify_reads_tokens_as_sglangs_parser(sglang_parser: argparse.ArgumentParser,
                                                 token: str) -> None:
    """exact/abbrev: the option argparse takes; ambiguous and unknown: argparse refuses."""
    how, option, _ = hicache.classify(token)
    spec = hicache.BY_OPTION.get(option or "")
    value = "1" if spec is None else next(
        (c for c in spec.choices if c != spec.default), "1")  # a value it takes, not its default
    argv = [token] if (spec and spec.switch) or how in ("unknown", "ambiguous") else [token, value]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = sglang_parser.parse_args(["--model-path", "m", *argv])
    except SystemExit:
        message = err.getvalue()
        assert how in ("ambiguous", "unknown"), message
        assert ("ambiguous" in message) == (how == "ambiguous"), message
        return
    assert how in ("exact", "abbrev", "other"), token
    if how != "other":
        spec = hicache.BY_OPTION[option]
        assert getattr(ns, spec.field) != spec.default, token  # it set that flag


# ------------------------------------------------------------------ startup, against SGLang

MODES = ("cache", "buffer_only")
POLICIES = ("write_through", "write_through_selective", "write_back")
IOS = ("kernel", "direct", "kernel_ascend")
LAYOUTS = ("layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head")
STORAGES = (None, "file", "mooncake", "npu_memcache")
OTHERS: tuple[list[str], ...] = (
    [], ["--disable-radix-cache"], ["--enable-lmcache"], ["--enable-unified-memory"],
    ["--enable-unified-cache-external-linker"], ["--disaggregation-mode", "prefill"],
    ["--disaggregation-mode", "decode"],
    ["--disaggregation-mode", "decode", "--disaggregation-decode-retraction-backup", "cpu_tensor"],
    ["--disaggregation-mode", "decode", "--disable-radix-cache"])


def _argv(on: bool, mode: str, policy: str, io_: str, layout: str, storage: str | None,
          others: list[str]) -> list[str]:
    argv = ["--enable-hierarchical-cache"] if on else []
    argv += ["--hicache-host-memory-mode", mode, "--hicache-write-policy", policy,
             "--hicache-io-backend", io_, "--hicache-mem-layout", layout]
    if storage is not None:
        argv += ["--hicache-storage-backend", storage]
    return argv + others


GRID = [*itertools.product([True], MODES, POLICIES, IOS, LAYOUTS, STORAGES, [[]]),
        *itertools.product([True, False], MODES, ["write_back"], IOS, LAYOUTS,
                           [None, "mooncake"], OTHERS[1:])]


@pytest.mark.parametrize("chunk", range(4))
def test_startup_agrees_with_sglangs_hooks(sglang_parser: argparse.ArgumentParser,
                                           chunk: int) -> None:
    """Over every combination: lint refuses exactly what SGLang's hooks refuse, and with
    HiCache on predicts the write policy, io backend and layout SGLang resolves; with it off
    SGLang changes nothing and lint says the flags are ignored."""
    mismatches = []
    for case in GRID[chunk::4]:
        argv = _argv(*case)
        refusal, resolved = sglang_resolves(sglang_parser, argv)
        outcome = lint_resolves(argv)
        if (refusal is not None) != outcome.refused:
            mismatches.append((argv, refusal, [f.msg for f in outcome.findings]))
            continue
        if refusal is not None:
            continue
        if outcome.enabled:
            for flag in (hicache.WRITE_POLICY, hicache.IO_BACKEND, hicache.MEM_LAYOUT):
                if outcome.effective[flag] != resolved[flag]:
                    mismatches.append((argv, flag, outcome.effective[flag], resolved[flag]))
        elif "decode" not in argv or "cpu_tensor" in argv:  # SGLang leaves them alone
            asked = dict(zip(argv[::2], argv[1::2], strict=False))
            changed = [f for f in (hicache.WRITE_POLICY, hicache.IO_BACKEND, hicache.MEM_LAYOUT)
                       if resolved[f] != asked[f]]
            ignored = {f.flag for f in outcome.findings if f.type == "hicache_ignored"}
            if changed or not {hicache.WRITE_POLICY, hicache.MEM_LAYOUT} <= ignored:
                mismatches.append((argv, changed, ignored))
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize(("argv", "refused"), [
    (["--hicache-host-memory-fraction", "0"], True),
    (["--hicache-host-memory-fraction", "1"], False),
    (["--hicache-host-memory-fraction", "1.01"], True),
    (["--hicache-host-memory-fraction", "nan"], True),
    (["--enable-hierarchical-cache", "--hicache-host-memory-fraction", "-0.5"], True),
    (["--enable-hierarchical-cache", "--hicache-ratio", "3", "--hicache-size", "8"], False),
])
def test_fraction_rule_is_sglangs(sglang_parser: argparse.ArgumentParser, argv: list[str],
                                  refused: bool) -> None:
    refusal, _ = sglang_resolves(sglang_parser, argv)
    assert (refusal is not None) == refused == lint_resolves(argv).refused, refusal


@pytest.mark.parametrize(("argv", "fraction_used"), [
    (["--enable-hierarchical-cache"], True),
    (["--enable-hierarchical-cache", "--hicache-ratio", "3"], False),
    (["--enable-hierarchical-cache", "--hicache-size", "8"], False),
    (["--enable-hierarchical-cache", "--hicache-size", "-8"], True),
    (["--enable-hierarchical-cache", "--hicache-host-memory-mode", "buffer_only",
      "--hicache-storage-backend", "file"], True),
])
def test_host_size_rule_is_the_one_sglang_resolves(sglang_parser: argparse.ArgumentParser,
                                                   argv: list[str], fraction_used: bool) -> None:
    """Auto-sizing (the fraction) applies exactly when SGLang keeps the fraction; the default
    ratio is the one SGLang resolves for the mode."""
    _, resolved = sglang_resolves(sglang_parser, argv)
    outcome = lint_resolves(argv)
    assert (resolved[hicache.FRACTION] is not None) == fraction_used
    assert outcome.host_size is not None
    assert ("reduced at startup" in outcome.host_size) == fraction_used
    if fraction_used:
        assert outcome.host_size.startswith(f"{resolved[hicache.RATIO]} x the device pool")


def test_host_pool_sizes_as_sglangs_base_pool() -> None:
    """The rules SGLang's hooks do not run: its host pool's size, int(tokens x ratio) one
    page up (pool_host/base.py:226), fails for a negative ratio or NaN, and a pool smaller
    than the device pool only warns."""
    assert host_pool(-0.5, 0, None, "cache").error is not None
    assert host_pool(float("nan"), 0, None, "cache").error is not None
    assert host_pool(float("inf"), 0, None, "cache").error is not None
    small = host_pool(0.5, 0, None, "cache")
    assert small.error is None and "only warns" in (small.warning or "")
    assert host_pool(0.5, 8, None, "cache") == host_pool(3.0, 8, None, "cache")  # size wins
    assert host_pool(None, 0, 0.8, "buffer_only").rule.startswith("1.2 x")
    with pytest.raises(ValueError):
        int(1000 * float("nan"))  # what SGLang's sizing does with it


# ------------------------------------------------------------------ reading the flags


SH = "#!/bin/sh\nexec python3 -m sglang.launch_server --model-path m "


def kinds(text: str, name: str = "serve.sh") -> list[tuple[str, str]]:
    return [(p.severity, p.type) for p in lint_text(text, name).unique()]


@pytest.mark.parametrize(("text", "name", "expected"), [
    # a file that mentions only HiCache is read (no radix, no --config in it)
    (SH + "--enable-hicache --hicache-write-policy wb\n", "serve.sh",
     [("error", "invalid_choice")]),
    (SH + "--enable-hierarchical-cache --enable-hierarchical-cache --enable-hicache\n",
     "serve.sh", []),
    (SH + "--enable-hicache --hicache-ratio 2 --hicache-ratio 3\n", "serve.sh",
     [("warning", "overridden")]),
    # argparse checks every value it reads, the overridden ones too
    (SH + "--enable-hicache --hicache-ratio x --hicache-ratio 3\n", "serve.sh",
     [("warning", "overridden"), ("error", "invalid_value")]),
    (SH + "--enable-hicache --hicache-ratio\n", "serve.sh", [("error", "missing_value")]),
    (SH + "--enable-hicache --hicache-ratio -1.5\n", "serve.sh", [("error", "ratio_value")]),
    (SH + '--enable-hicache --hicache-ratio "$R"\n', "serve.sh", [("note", "not_checked")]),
    (SH + "--enable-hicache $EXTRA_ARGS\n", "serve.sh", []),  # filled in at deploy: no stray
    (SH + "-- --enable-hicache\n", "serve.sh", [("error", "unknown_option")]),
    (SH + "--hicache-ratio 3 --disaggregation-mode decode\n", "serve.sh", []),
    ("args: ['--enable-hicache --hicache-ratio 2']\n", "k8s.yaml", [("error", "unknown_option")]),
    # SGLang --config files: a switch is `true` (the flag) or `false` (nothing)
    ("enable-hicache: true\nhicache-ratio: 0.5\n", "c.yaml", [("warning", "ratio_small")]),
    ("enable-hierarchical-cache: false\nhicache-ratio: 3\n", "c.yaml",
     [("warning", "hicache_ignored")]),
    ("enable-hierarchical-cache: true\ndisable-radix-cache: true\n", "c.yaml",
     [("error", "hicache_conflict")]),
    ("enable-hierarchical-cache: true\nhicache-write-policy: null\n", "c.yaml",
     [("error", "invalid_choice")]),
    # settings mappings at any depth (Helm values)
    ("sglang:\n  enable_hierarchical_cache: 'true'\n  hicache-io-backend: direct\n", "v.yaml",
     [("warning", "hicache_rewritten")]),
    ("sglang:\n  enable-hierarchical-cache: 1\n", "v.yaml", [("error", "config_type")]),
    # a templated switch: on or off only at deploy time, so nothing hangs on it
    ("sglang:\n  enable-hierarchical-cache: '{{ .Values.hicache }}'\n  hicache-ratio: 0.5\n",
     "v.yaml", [("note", "not_checked")]),
    ("sglang:\n  enable-hierarchical-cache: true\n  hicache-ratio: [2]\n", "v.yaml",
     [("error", "config_type")]),
    ('{"sglang": {"enable-hierarchical-cache": true, "hicache-size": 8}}', "v.json", []),
    ('[sglang]\nenable-hierarchical-cache = true\nhicache-host-memory-mode = "buffer_only"\n',
     "s.toml", [("error", "buffer_only_storage")]),
])
def test_reading_hicache_flags(text: str, name: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text, name) == expected


def test_hints_name_the_flag_or_choice() -> None:
    report = lint_text(SH + "--enable-hierarchical-cache --hicache-io-backend kernal "
                       "--hicache-write-polcy write_back\n", "serve.sh")
    hints = {p.type: p.hint for p in report.unique()}
    assert hints == {"invalid_choice": "did you mean 'kernel'?",
                     "unknown_option": "write --hicache-write-policy"}
