"""SGLang 0.5.23's HiCache (host KV tier) flags: each flag, how its parser reads it, and
what SGLang does with the values at startup.

The one statement of these rules for ``radix-evict lint``: it reads the flags
with :data:`FLAGS` and :func:`classify` (in :mod:`.argv`, beside the eviction
flags) and places :func:`startup`'s findings at the file's words
(:mod:`.verdict`). What SGLang's hooks do not decide (how it sizes the host pool,
which flags it ignores) is stated in :mod:`radix_evict.sglang.check`, which
``radix-evict sglang check`` reports beside the verdict of SGLang's own hooks;
tests/lint/test_lint_hicache.py holds :func:`startup` to those hooks. Nothing
here imports SGLang. Paths below are in SGLang 0.5.23's ``sglang/srt``.

SGLang's order, each stage stopping it before the next:

1. its argument parser (``arg_groups/fields/memory.py``: choices and types,
   :data:`FLAGS`);
2. ``handle_hicache_ratio_default`` (``arg_groups/hicache_hook.py:100``, run for
   every launch): ``--hicache-host-memory-fraction`` must be in (0, 1];
3. ``handle_hicache`` (``hicache_hook.py:18``): with the unified-cache external
   linker HiCache is refused; without ``--enable-hierarchical-cache`` (and not a
   PD decode server) it returns before looking at any other HiCache flag;
   otherwise ``buffer_only`` needs a storage backend and turns ``write_back`` into
   ``write_through``, and the layout and io backend are rewritten to a pair it
   supports;
4. ``handle_cache_compatibility`` (``arg_groups/kv_cache_hook.py:351``): HiCache
   and ``--disable-radix-cache`` (or ``--enable-lmcache``) are mutually exclusive;
5. building the host pool (``mem_cache/pool_host/base.py:219``): ``--hicache-size``
   GB when above 0, else ``--hicache-ratio`` times the device pool; smaller than
   the device pool only warns.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from radix_evict.sglang.check import HICACHE_ENABLE as ENABLE
from radix_evict.sglang.check import (
    HICACHE_FLAGS,
    hicache_flags_used,
    host_pool,
    unused_hicache_flags,
)
from radix_evict.sglang.check import HICACHE_FRACTION as FRACTION
from radix_evict.sglang.check import HICACHE_RATIO as RATIO
from radix_evict.sglang.check import HICACHE_SIZE as SIZE
from radix_evict.suggest import did_you_mean, suggest

ERROR, WARNING = "error", "warning"

MODE = "--hicache-host-memory-mode"
WRITE_POLICY = "--hicache-write-policy"
IO_BACKEND = "--hicache-io-backend"
MEM_LAYOUT = "--hicache-mem-layout"
STORAGE = "--hicache-storage-backend"
PREFETCH_POLICY = "--hicache-storage-prefetch-policy"
STORAGE_CONFIG = "--hicache-storage-backend-extra-config"
RETRY_POLL = "--hicache-storage-prefetch-retry-poll-interval"
RETRY_MAX = "--hicache-storage-prefetch-retry-max-attempts"
# Other features' flags the HiCache rules read (recognized when spelled in full).
DISABLE_RADIX = "--disable-radix-cache"
LMCACHE = "--enable-lmcache"
LINKER = "--enable-unified-cache-external-linker"
UNIFIED_MEMORY = "--enable-unified-memory"
PD_MODE = "--disaggregation-mode"
PD_OFFLOAD = "--disaggregation-decode-enable-offload-kvcache"
PD_BACKUP = "--disaggregation-decode-retraction-backup"


@dataclass(frozen=True)
class Flag:
    """One of SGLang's arguments: its parser's type, choices and default, and where SGLang
    declares it. ``hicache``: one of HiCache's own flags (False: read for a rule only)."""

    name: str
    field: str
    type: str  # "bool" (a switch: store_true), "float", "int" or "str"
    default: Any
    source: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    hicache: bool = True

    @property
    def options(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def switch(self) -> bool:
        return self.type == "bool"


_M = "arg_groups/fields/memory.py"
FLAGS: tuple[Flag, ...] = (
    Flag(ENABLE, "enable_hierarchical_cache", "bool", False, f"{_M}:98",
         aliases=("--enable-hicache",)),
    Flag(MODE, "hicache_host_memory_mode", "str", "cache", f"{_M}:102",
         ("cache", "buffer_only")),
    Flag(RATIO, "hicache_ratio", "float", None, f"{_M}:109"),
    Flag(SIZE, "hicache_size", "int", 0, f"{_M}:113"),
    Flag(FRACTION, "hicache_host_memory_fraction", "float", 0.8, f"{_M}:117"),
    Flag(WRITE_POLICY, "hicache_write_policy", "str", "write_through", f"{_M}:121",
         ("write_back", "write_through", "write_through_selective")),
    Flag(IO_BACKEND, "hicache_io_backend", "str", "kernel", f"{_M}:128",
         ("direct", "kernel", "kernel_ascend")),
    Flag(MEM_LAYOUT, "hicache_mem_layout", "str", "page_first", f"{_M}:135",
         ("layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head")),
    Flag(STORAGE, "hicache_storage_backend", "str", None, f"{_M}:148",
         ("file", "sim", "mooncake", "npu_memcache", "hf3fs", "nixl", "aibrix", "dynamic", "eic",
          "simm", "mori", "shm", "tensorcast", "seaweedfs")),
    Flag(PREFETCH_POLICY, "hicache_storage_prefetch_policy", "str", "timeout", f"{_M}:170",
         ("best_effort", "wait_complete", "timeout")),
    Flag(STORAGE_CONFIG, "hicache_storage_backend_extra_config", "str", None, f"{_M}:177"),
    Flag(RETRY_POLL, "hicache_storage_prefetch_retry_poll_interval", "int", 8, f"{_M}:181"),
    Flag(RETRY_MAX, "hicache_storage_prefetch_retry_max_attempts", "int", 8, f"{_M}:195"),
    Flag(DISABLE_RADIX, "disable_radix_cache", "bool", False, f"{_M}:64", hicache=False),
    Flag(LMCACHE, "enable_lmcache", "bool", False, f"{_M}:256", hicache=False),
    Flag(LINKER, "enable_unified_cache_external_linker", "bool", False, f"{_M}:209",
         hicache=False),
    Flag(UNIFIED_MEMORY, "enable_unified_memory", "bool", False, f"{_M}:78", hicache=False),
    Flag(PD_MODE, "disaggregation_mode", "str", "null", "arg_groups/fields/disagg.py:55",
         ("null", "prefill", "decode"), hicache=False),
    Flag(PD_OFFLOAD, "disaggregation_decode_enable_offload_kvcache", "bool", False,
         "arg_groups/fields/disagg.py:92", hicache=False),
    Flag(PD_BACKUP, "disaggregation_decode_retraction_backup", "str", None,
         "arg_groups/fields/disagg.py:95", ("cpu_tensor", "host_pool", "none"), hicache=False),
)
BY_NAME = {f.name: f for f in FLAGS}
BY_OPTION = {o: f for f in FLAGS for o in f.options}
HICACHE_OPTIONS = tuple(o for f in FLAGS if f.hicache for o in f.options)
# The other features' flags, read only when spelled in full (their abbreviations are
# left to SGLang; --disable-radix-cache's are known in .argv).
CONTEXT_OPTIONS = tuple(f.name for f in FLAGS if not f.hicache and f.name != DISABLE_RADIX)

# Every SGLang 0.5.23 option that starts with one of HiCache's stems (tests check them
# against SGLang's parser): argparse takes a token that starts with a stem as the option
# it is a prefix of, refuses one that is a prefix of several (ambiguous), and one that
# is a prefix of none (unrecognized).
STEMS = ("--hi", "--enable-h")
STEM_OPTIONS = (
    *(o for o in HICACHE_OPTIONS if o.startswith("--hi")),
    "--hierarchical-sparse-attention-extra-config", "--hisparse-config",
    "--enable-hierarchical-cache", "--enable-hicache", "--enable-hisparse", "--enable-http2",
    "--enable-http-worker-reuseport",
)
FLAG_CUTOFF = 0.75  # as for the eviction flags: a flag is long


def classify(name: str) -> tuple[str, str | None, tuple[str, ...]]:
    """How SGLang's parser reads option ``name`` (the part before any ``=``), for HiCache:
    ``exact`` or ``abbrev`` (with the option it means), ``ambiguous`` (with the options it
    could mean), ``unknown`` (refused; looks like a HiCache flag), ``other`` (not ours)."""
    if name in BY_OPTION and (name in HICACHE_OPTIONS or name in CONTEXT_OPTIONS):
        return "exact", name, ()
    if name.startswith(STEMS):
        matches = tuple(o for o in STEM_OPTIONS if o.startswith(name))
        if len(matches) == 1:
            return ("abbrev", matches[0], ()) if matches[0] in HICACHE_OPTIONS else (
                "other", None, ())
        if len(matches) > 1:
            ours = any(m in HICACHE_OPTIONS for m in matches)
            return ("ambiguous", None, matches) if ours else ("other", None, ())
    elif not name.startswith("--"):
        return "other", None, ()
    low = name.lower()
    if name.startswith(STEMS) and ("cache" in low or "hier" in low):
        return "unknown", None, ()
    if ("hicache" in low or "hierarchical" in low) and near(name):
        return "unknown", None, ()
    return "other", None, ()


def near(name: str) -> str | None:
    """The HiCache flag ``name`` is a near miss of (dashes for underscores), if any."""
    return suggest(name.replace("_", "-"), HICACHE_OPTIONS, cutoff=FLAG_CUTOFF)


# ---------------------------------------------------------------- the parser's verdict


@dataclass(frozen=True)
class Finding:
    """One thing SGLang refuses (``error``) or silently does otherwise (``warning``),
    about ``flag``'s value (``at_value``) or the flag itself."""

    severity: str
    type: str
    flag: str
    msg: str
    hint: str | None = None
    at_value: bool = True
    also: tuple[str, ...] = ()  # where to place it when the launch does not set ``flag``


def parse_value(flag: Flag, text: str) -> tuple[Any, Finding | None]:
    """``text`` as SGLang's parser converts it for ``flag`` (``type=`` then ``choices``)."""
    if flag.type in ("float", "int"):
        convert = float if flag.type == "float" else int
        try:
            return convert(text), None
        except ValueError:
            return None, Finding(ERROR, "invalid_value",
                                 flag.name, f"SGLang refuses {text!r}: invalid {flag.type} value "
                                 f"for {flag.name} (its argument parser)",
                                 hint=_type_hint(flag))
    if flag.choices and text not in flag.choices:
        offered = ", ".join(flag.choices)
        near_choice = did_you_mean(text, flag.choices)
        return None, Finding(ERROR, "invalid_choice", flag.name,
                             f"SGLang refuses {text!r}: invalid choice for {flag.name} "
                             f"(choices: {offered})", hint=near_choice)
    return text, None


def _type_hint(flag: Flag) -> str:
    if flag.name == SIZE:
        return "a whole number of GB, e.g. 64"
    return "a number, e.g. 2.0" if flag.type == "float" else "a whole number"


# ---------------------------------------------------------------- startup


class _Unknown:
    """A value filled in at deploy time: rules that read it are not applied."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass
class Outcome:
    """What SGLang does with one launch's HiCache settings."""

    enabled: bool  # --enable-hierarchical-cache
    findings: list[Finding] = field(default_factory=list)
    # flag -> its value after SGLang's rewrites (the HiCache flags only)
    effective: dict[str, Any] = field(default_factory=dict)
    rewrites: list[tuple[str, Any, Any, str]] = field(default_factory=list)  # flag, from, to, why
    host_size: str | None = None  # the host pool's size rule in effect (HiCache on)

    @property
    def refused(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)


def startup(values: Mapping[str, Any], given: Collection[str] = ()) -> Outcome:
    """What SGLang 0.5.23 does at startup with these values (flag name -> the parsed value;
    a flag absent is its default, :data:`UNKNOWN` is a value filled in at deploy time).
    ``given``: the flags the launch sets (for what it sets and SGLang ignores)."""
    v = {f.name: values.get(f.name, f.default) for f in FLAGS}
    given = set(given) | set(values)
    enabled = v[ENABLE] is True
    out = Outcome(enabled)
    err = out.findings.append

    # 2. handle_hicache_ratio_default: every launch (hicache_hook.py:116)
    fraction = v[FRACTION]
    if fraction is not UNKNOWN and not 0 < fraction <= 1:
        err(Finding(ERROR, "fraction_range", FRACTION,
                    f"must be in (0, 1], got {_show(fraction)}: SGLang refuses it at startup "
                    "(\"--hicache-host-memory-fraction must be in (0, 1].\")"))
        return out

    # 3. handle_hicache (hicache_hook.py:18)
    if v[ENABLE] is UNKNOWN:  # a templated switch: on or off is known only at deploy time
        return out
    if v[LINKER] is True:
        if enabled:
            err(Finding(ERROR, "hicache_conflict", ENABLE,
                        f"SGLang refuses {ENABLE} with {LINKER}: mutually exclusive "
                        "(hicache_hook.py:50)", at_value=False))
        elif v[STORAGE] not in (None, UNKNOWN):
            err(Finding(ERROR, "hicache_conflict", STORAGE,
                        f"SGLang refuses {STORAGE} with {LINKER}: the linker does not use it "
                        "(hicache_hook.py:55)"))
        else:  # the linker may read the storage config; nothing else of HiCache's
            _ignored(out, [f for f in _given_options(values, given) if f != STORAGE_CONFIG])
        return out
    decode = v[PD_MODE]
    if not enabled and UNKNOWN in (decode, v[PD_BACKUP]):
        return out
    if not hicache_flags_used(enabled, decode, v[PD_BACKUP], v[PD_OFFLOAD] is True):
        _ignored(out, _given_options(values, given))
        if v[LMCACHE] is True and v[MODE] == "buffer_only":  # kv_cache_hook.py:466
            err(Finding(ERROR, "hicache_conflict", MODE,
                        f"SGLang refuses {MODE} buffer_only with {LMCACHE}: a HiCache-only "
                        "mode"))
        return out
    mode, policy = v[MODE], v[WRITE_POLICY]
    eff = {f.name: v[f.name] for f in FLAGS if f.hicache}
    if mode == "buffer_only":  # validate_hicache_host_memory_mode (hicache_hook.py:247)
        if v[STORAGE] is None:
            err(Finding(ERROR, "buffer_only_storage", MODE,
                        f"SGLang refuses {MODE} buffer_only without {STORAGE}: host memory is "
                        "then only a staging buffer, and the data lives in storage "
                        "(hicache_hook.py:272)"))
            return out
        if policy == "write_back":
            _rewrite(out, eff, WRITE_POLICY, "write_through",
                     "buffer_only has no host tier to write back to (hicache_hook.py:278)",
                     MODE)
        if decode == "decode":
            err(Finding(ERROR, "buffer_only_decode", MODE,
                        f"SGLang refuses {MODE} buffer_only on a PD decode server "
                        "(hicache_hook.py:289)"))
            return out
    _layout_rewrites(out, eff, v)

    # 4. handle_cache_compatibility (kv_cache_hook.py:393, :434)
    if enabled and v[DISABLE_RADIX] is True:
        err(Finding(ERROR, "hicache_conflict", ENABLE,
                    f"SGLang refuses {ENABLE} with {DISABLE_RADIX}: mutually exclusive (the host "
                    "tier extends the radix cache)", at_value=False))
    if enabled and v[LMCACHE] is True:
        err(Finding(ERROR, "hicache_conflict", ENABLE,
                    f"SGLang refuses {ENABLE} with {LMCACHE}: mutually exclusive",
                    at_value=False))
    out.effective = eff
    if out.refused:
        return out

    # 5. the host pool
    _host_pool(out, v, _given_options(values, given))
    return out


def _layout_rewrites(out: Outcome, eff: dict[str, Any], v: Mapping[str, Any]) -> None:
    """handle_hicache's rewrites of the memory layout and io backend that do not go
    together (hicache_hook.py:174-232), each a warning on ``out``, applied to ``eff``."""
    layout, io = eff[MEM_LAYOUT], eff[IO_BACKEND]
    if layout == "page_first_direct" and io == "kernel":  # hicache_hook.py:174
        _rewrite(out, eff, IO_BACKEND, "direct",
                 "the kernel io backend does not support the page_first_direct layout",
                 MEM_LAYOUT)
    if layout == "page_first" and eff[IO_BACKEND] == "direct":  # hicache_hook.py:186
        _rewrite(out, eff, MEM_LAYOUT, "page_first_direct",
                 "the page_first layout is not supported with the direct io backend",
                 IO_BACKEND)
    io = eff[IO_BACKEND]
    if (v[STORAGE] in ("mooncake", "npu_memcache") and eff[MEM_LAYOUT] == "layer_first"
            and io in ("direct", "kernel")):  # hicache_hook.py:203
        _rewrite(out, eff, MEM_LAYOUT, "page_first_direct" if io == "direct" else "page_first",
                 f"the {v[STORAGE]} storage backend does not support the layer_first layout "
                 f"(unless --dcp-size > 1 with mooncake)", STORAGE)
    if v[UNIFIED_MEMORY] is True and eff[MEM_LAYOUT] == "page_first_direct":  # :232
        _rewrite(out, eff, MEM_LAYOUT, "page_first",
                 f"{UNIFIED_MEMORY}: the direct io backend cannot copy the unified pool's "
                 "strided rows", UNIFIED_MEMORY)
        if eff[IO_BACKEND] != "kernel":
            _rewrite(out, eff, IO_BACKEND, "kernel", f"{UNIFIED_MEMORY} (as above)",
                     UNIFIED_MEMORY)


def _host_pool(out: Outcome, v: Mapping[str, Any], given: list[str]) -> None:
    """The host pool's size flags (``given``: the HiCache options the launch sets): which
    SGLang ignores, then the size rule in effect and whether it refuses the ratio
    (radix_evict.sglang.check.host_pool: pool_host/base.py:219)."""
    ratio, size, fraction, mode = v[RATIO], v[SIZE], v[FRACTION], v[MODE]
    known = size is not UNKNOWN
    for flag, kind, why in unused_hicache_flags(given, True, size if known else None):
        hint = {"ratio_ignored": f"drop one of {RATIO} and {SIZE}",
                "size_ignored": "write a size above 0",
                "fraction_ignored": f"drop {FRACTION}"}[kind]
        out.findings.append(Finding(WARNING, kind, flag, f"SGLang ignores {flag}: {why}",
                                    hint=hint))
    if UNKNOWN in (ratio, size, fraction, mode):
        return
    pool = host_pool(ratio, size, fraction, mode, v[PD_MODE] == "decode")
    out.host_size = pool.rule
    if pool.error:
        out.findings.append(Finding(ERROR, "ratio_value", RATIO, pool.error,
                                    hint="a ratio above 1, e.g. 2.0"))
    elif pool.warning:
        out.findings.append(Finding(WARNING, "ratio_small", RATIO, pool.warning,
                                    hint="a ratio above 1, e.g. 2.0"))


def _ignored(out: Outcome, given: list[str]) -> None:
    for flag, kind, why in unused_hicache_flags(given, False, None):
        out.findings.append(Finding(WARNING, kind, BY_OPTION[flag].name,
                                    f"SGLang ignores {flag}: {why}",
                                    hint=f"add {ENABLE}, or drop {flag}"))


def _given_options(values: Mapping[str, Any], given: Collection[str]) -> list[str]:
    return sorted({*values, *given} & set(HICACHE_FLAGS), key=HICACHE_FLAGS.index)


def _rewrite(out: Outcome, eff: dict[str, Any], flag: str, to: Any, why: str,
             cause: str) -> None:
    was = eff[flag]
    if was is UNKNOWN:
        return
    eff[flag] = to
    out.rewrites.append((flag, was, to, why))
    out.findings.append(Finding(WARNING, "hicache_rewritten", flag,
                                f"SGLang runs {flag} {to}, not {was}: {why}",
                                hint=f"write {flag} {to}", also=(cause,)))


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)
