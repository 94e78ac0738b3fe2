"""radix-evict inside SGLang 0.5.23, through SGLang's own plugin system.

SGLang calls :func:`radix_evict.sglang.plugin.register` (entry point ``radix_evict`` in
group ``sglang.srt.plugins``) once per process. It puts radix-evict's extra policies into
SGLang's strategy registry and ``--radix-eviction-policy`` choices, validates every
policy's config with radix-evict's rules, and runs the added names on SGLang's Python
tree core. SGLang is imported only by the modules of this package, and only when they
are called: ``import radix_evict`` never needs it.
"""

# The modules; none imports SGLang at import time.
__all__ = [
    "adapter",
    "check",
    "native",
    "patching",
    "plugin",
    "routing",
    "startup",
    "strategies",
]
