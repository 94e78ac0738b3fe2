"""What SGLang 0.5.23 offers and where (facts read from its wheel, written once here)."""

from __future__ import annotations

SUPPORTED_VERSION = "0.5.23"
DISTRIBUTION = "sglang"

# Entry point group SGLang's load_plugins() runs, the allow-list that filters it, and the
# name radix-evict's own distribution declares there.
PLUGIN_GROUP = "sglang.srt.plugins"
PLUGIN_ALLOW_ENV = "SGLANG_PLUGINS"
ENTRY_POINT = "radix_evict"

# The strategies SGLang builds itself (mem_cache/evict_policy.py), and the subset it offers
# as --radix-eviction-policy choices (arg_groups/choices.py).
NATIVE_POLICIES = ("lru", "lfu", "fifo", "mru", "filo", "priority", "slru", "tlru")
NATIVE_CHOICES = ("lru", "lfu", "slru", "priority", "tlru")

# Modules this package changes, each only once SGLang itself imports it.
CHOICES_MODULE = "sglang.srt.arg_groups.choices"
STRATEGIES_MODULE = "sglang.srt.mem_cache.utils"
TREE_CORE_REGISTRY_MODULE = "sglang.srt.mem_cache.unified_cache.tree_core_registry"
PYTHON_TREE_CORE_MODULE = "sglang.srt.mem_cache.unified_cache.unified_tree_core"
UNIFIED_CACHE_MODULE = "sglang.srt.mem_cache.unified_radix_cache"
LEGACY_TREE_MODULE = "sglang.srt.mem_cache.radix_cache"

TREE_CORE_ENV = "SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND"  # default "rust"

# SGLang's server-argument default for --radix-eviction-policy (server_args.py).
DEFAULT_POLICY = "lru"

# The keyword arguments each of SGLang's strategies takes (mem_cache/evict_policy.py);
# get_eviction_strategy passes the config as **config, so these are the only valid keys.
STRATEGY_KEYS: dict[str, tuple[str, ...]] = {
    "slru": ("protected_threshold",),
    "tlru": ("threshold", "next_prompt_estimate"),
}
# tlru's startup check (arg_groups/kv_cache_hook.py) reads each key with this default.
TLRU_KEY_DEFAULT = 0

# The Rust tree core (SGLang's default) takes slru's protected_threshold as a C long.
RUST_INT_RANGE = (-(2**63), 2**63 - 1)
