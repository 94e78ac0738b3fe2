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

TREE_CORE_ENV = "SGLANG_UNIFIED_RADIX_TREE_CORE_BACKEND"  # default "rust"
