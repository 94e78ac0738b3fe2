"""radix-evict inside SGLang 0.5.23, through SGLang's own plugin system.

SGLang calls :func:`radix_evict.sglang.plugin.register` (entry point ``radix_evict`` in
group ``sglang.srt.plugins``) once per process. It puts radix-evict's extra policies into
SGLang's strategy registry and ``--radix-eviction-policy`` choices, validates every
policy's config with radix-evict's rules, runs the added names on SGLang's Python tree
core, and delivers SGLang's tree events to a stateful policy's lifecycle callbacks.
SGLang is imported only by the modules of this package, and only when they are called:
``import radix_evict`` never needs it.
"""

# The modules; none imports SGLang at import time.
__all__ = [
    "adapter",
    "check",
    "context",
    "events",
    "legacy_events",
    "native",
    "patching",
    "plugin",
    "report",
    "routing",
    "startup",
    "strategies",
    "unified_events",
]
