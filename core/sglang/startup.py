"""SGLang 0.5.23's startup verdict on one of its own policies and a decoded config.

The one statement of what SGLang checks after its argument parser, in its order:

1. its server-argument check (``arg_groups/kv_cache_hook.py``): for tlru,
   ``threshold`` and ``next_prompt_estimate`` (default 0) must compare as
   numbers, be >= 0, and ``threshold > next_prompt_estimate``;
2. ``get_eviction_strategy``: a falsy config (``{}``, ``0``, ``[]``, ``null``...)
   means none; anything else is passed as ``**config``, so it must be an
   object whose keys the strategy takes (:data:`native.STRATEGY_KEYS`);
3. the tree core: SGLang's default (Rust) core takes slru's
   ``protected_threshold`` as a C long, refusing a float or a string at
   startup (its Python core would fail on a string at the first eviction).

Facts only, from :mod:`radix_evict.sglang.native`; SGLang is not imported, so
``radix-evict lint`` gives the verdict anywhere, and ``radix-evict sglang
check`` adds it to what SGLang's own code says where SGLang is installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from radix_evict.errors import ProblemType, json_type, short_value, valid_keys_text
from radix_evict.suggest import did_you_mean

from . import native

__all__ = ["ERROR", "SERVER_ARGS", "STRATEGY", "TREE_CORE", "WARNING", "Refusal", "startup_verdict"]

ERROR, WARNING = "error", "warning"
# Which of SGLang's checks refuses a setting (the stages, in the order SGLang runs them).
SERVER_ARGS = "server_args"  # its server-argument check, before any cache exists
STRATEGY = "strategy"  # get_eviction_strategy, when the radix cache is built
TREE_CORE = "tree_core"  # the tree core taking the strategy's values


@dataclass(frozen=True)
class Refusal:
    """One thing SGLang refuses at startup (``error``) or silently ignores (``warning``).

    ``path``: the config key it is about (``()``: the whole config); ``key``: about
    the key itself rather than its value; ``setting``: where no config is given,
    it is about the policy (tlru's check reads its defaults). ``stage``: which
    check refuses it: ``server_args`` (runs even with ``--disable-radix-cache``),
    ``strategy`` or ``tree_core`` (only once the radix cache builds a strategy).
    """

    type: str
    msg: str
    path: tuple[str, ...] = ()
    hint: str | None = None
    severity: str = ERROR
    key: bool = False
    setting: bool = False
    stage: str = STRATEGY


def startup_verdict(policy: str, config: Any, *, rust_core: bool = True) -> list[Refusal]:
    """What SGLang says at startup about ``policy`` (one of its own) with ``config``
    (the decoded JSON, ``None`` when not given). Empty, or only warnings: it starts.

    ``rust_core``: the Rust tree core would run it (SGLang's default); its
    C-long rule applies only then.
    """
    if policy == "tlru":
        refused = _tlru_check(config)
        if refused:
            return refused
    found = _strategy(policy, config)
    if any(r.severity == ERROR for r in found):
        return found
    if rust_core:
        found += _rust_core(policy, config)
    return found


def _tlru_check(config: Any) -> list[Refusal]:
    cfg = config or {}
    if not isinstance(cfg, dict):
        return [Refusal(ProblemType.CONFIG_TYPE,
                        f"SGLang's tlru check reads keys from the config and fails on a JSON "
                        f"{json_type(cfg)} ('{type(cfg).__name__}' object has no attribute "
                        "'get')", hint="write a JSON object", stage=SERVER_ARGS)]
    keys = native.STRATEGY_KEYS["tlru"]
    values = {k: cfg.get(k, native.TLRU_KEY_DEFAULT) for k in keys}
    for key, value in values.items():
        if not isinstance(value, (int, float)):
            return [Refusal("number_type",
                            f"must be a number, got {json_type(value)} {short_value(value)}: "
                            "SGLang's tlru check compares it with 0 and fails at startup",
                            (key,), setting=True, stage=SERVER_ARGS)]
    for key, value in values.items():
        if value < 0:
            return [Refusal("greater_than_equal",
                            f"must be >= 0, got {short_value(value)}: SGLang's tlru check "
                            "refuses it", (key,), setting=True, stage=SERVER_ARGS)]
    threshold, estimate = values["threshold"], values["next_prompt_estimate"]
    if threshold <= estimate:
        return [Refusal("value_error",
                        f"threshold must be greater than next_prompt_estimate, got "
                        f"{short_value(threshold)} <= {short_value(estimate)}: SGLang refuses "
                        "tlru so (no tokens would ever be TEL-safe, so T-LRU would be plain LRU)",
                        ("threshold",) if "threshold" in cfg else (), setting=True,
                        stage=SERVER_ARGS)]
    return []


def _strategy(policy: str, config: Any) -> list[Refusal]:
    """``get_eviction_strategy``: ``factory(**config) if config else factory()``."""
    if not config:
        if config is not None and config != {}:
            return [Refusal("config_ignored",
                            f"SGLang takes the falsy JSON {json_type(config)} "
                            f"{short_value(config)} as no config at all",
                            hint="leave the flag out, or write {}", severity=WARNING)]
        return []
    if not isinstance(config, dict):
        return [Refusal(ProblemType.CONFIG_TYPE,
                        f"SGLang passes the config to the strategy as keyword arguments and "
                        f"fails at startup on a JSON {json_type(config)} (argument after ** must "
                        "be a mapping)", hint="write a JSON object")]
    allowed = native.STRATEGY_KEYS.get(policy, ())
    out = []
    for key in config:
        if key in allowed:
            continue
        near = did_you_mean(key, allowed)
        keys = valid_keys_text(policy, allowed)
        out.append(Refusal("extra_forbidden",
                           f"unknown key {key!r}: SGLang fails at startup building the {policy} "
                           "strategy (unexpected keyword argument)",
                           (key,), hint=f"{near}; {keys}" if near else keys, key=True))
    return out


def _rust_core(policy: str, config: Any) -> list[Refusal]:
    """SGLang's default (Rust) tree core takes slru's protected_threshold as a C long."""
    if policy != "slru" or not isinstance(config, dict) or "protected_threshold" not in config:
        return []
    value = config["protected_threshold"]
    path = ("protected_threshold",)
    if isinstance(value, int):  # a bool too: the Rust core reads it as 0 or 1
        low, high = native.RUST_INT_RANGE
        if low <= value <= high:
            return []
        return [Refusal("int_range", f"{value} does not fit SGLang's default (Rust) tree core, "
                        "which refuses it at startup (Python int too large to convert to C long)",
                        path, stage=TREE_CORE)]
    if isinstance(value, float):
        msg = (f"must be an integer, got the number {short_value(value)}: SGLang's default (Rust) "
               "tree core refuses a float at startup (its Python core would run it)")
    else:
        msg = (f"must be an integer, got {json_type(value)} {short_value(value)}: SGLang's "
               "default (Rust) tree core refuses it at startup, and its Python core fails at the "
               "first eviction comparing it with a hit count")
    return [Refusal("int_type", msg, path, stage=TREE_CORE)]
