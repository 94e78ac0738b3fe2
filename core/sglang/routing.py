"""Which tree core runs a policy: radix-evict's policies go to SGLang's Python core.

SGLang's unified cache defaults to its Rust tree core, which knows only SGLang's eight
policy names, and its fallback rules (``_rust_fallback_reason`` in
``tree_core_registry``) have no case for any other name, so a plugin policy would fail
inside the Rust core. The plugin adds that case: a name radix-evict added gets the Python
core, and SGLang logs ``Using the Python TreeCore: <reason>``. SGLang's own eight names
keep whatever core SGLang picks for them.

The Python core keeps the depth fields a radix-evict policy may read (``prefix_len``,
``history_len``) only under SGLang's ``tlru``; :func:`keep_depths` turns that bookkeeping
on for every bridged policy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from radix_evict.sglang import native
from radix_evict.sglang.strategies import is_bridged, is_bridged_factory


def python_core_reason(policy: str) -> str | None:
    """Why ``policy`` must run on the Python core, or None when SGLang may choose.

    A name whose factory in SGLang's strategy registry builds a radix-evict policy
    through the adapter needs it; SGLang's own strategies (validated or not) do not.
    """
    name = policy.lower()
    module = sys.modules.get(native.STRATEGIES_MODULE)
    factories = getattr(module, "_EVICTION_POLICY_FACTORIES", None) or {}
    if not is_bridged_factory(factories.get(name)):
        return None
    return (
        f"eviction policy {name!r} comes from radix-evict (SGLang plugin "
        f"{native.ENTRY_POINT!r}); the Rust TreeCore runs only SGLang's own eight policies"
    )


def with_policy_fallback(original: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """SGLang's fallback rule, plus: a radix-evict policy needs the Python core."""

    def rust_fallback_reason(params: Any) -> str | None:
        reason = python_core_reason(str(getattr(params, "eviction_policy", "") or ""))
        return reason if reason is not None else original(params)

    rust_fallback_reason.__wrapped__ = original  # type: ignore[attr-defined]
    return rust_fallback_reason


def keep_depths(original_init: Callable[..., None]) -> Callable[..., None]:
    """``UnifiedTreeCore.__init__`` that maintains node depths for bridged policies too."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if is_bridged(getattr(self, "eviction_strategy", None)):
            # The tree is still just its root (depth 0), so every later node is exact.
            self.tlru_bookkeeping = True

    __init__.__wrapped__ = original_init  # type: ignore[attr-defined]
    return __init__
