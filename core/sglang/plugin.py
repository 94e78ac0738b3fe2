"""The SGLang plugin: what entry point ``radix_evict`` (group ``sglang.srt.plugins``) runs.

SGLang's ``load_plugins()`` calls :func:`register` once in each of its processes, before
server arguments are parsed. It:

1. extends ``--radix-eviction-policy``'s choices with every name on radix-evict's choice
   list that SGLang does not offer (third-party policy packages included, filtered by
   ``RADIX_EVICT_PLUGINS``);
2. once SGLang imports its strategy registry: adds a factory for each of those names that
   SGLang has no strategy for (radix-evict's policy through the node adapter), and puts
   radix-evict's config validation in front of SGLang's own eight strategies;
3. once SGLang imports its tree-core registry and Python core: runs the added names on the
   Python core, with a log line that says why, and keeps the node depths they may read;
4. once SGLang imports its Python core and its legacy tree: delivers their tree events to
   a stateful policy's lifecycle callbacks (:mod:`radix_evict.sglang.unified_events`,
   :mod:`radix_evict.sglang.legacy_events`), and gives the legacy tree's nodes
   radix-evict's logical clock;
5. for a policy with ``uses_context``: records each request's context on the nodes its
   lookups and checkpoints touch (:mod:`radix_evict.sglang.context`; for the unified
   tree, once SGLang imports ``UnifiedRadixCache``, whose ``checkpoint`` it wraps).

Importing this module changes nothing. :func:`register` is idempotent, imports no heavy
SGLang module itself (steps 2 and 3 wait for SGLang's own imports), and never raises: if
anything goes wrong it logs, undoes what it changed, and SGLang starts as it would have
without radix-evict.
"""

from __future__ import annotations

import importlib
import logging
import threading
import types
from dataclasses import dataclass, field

from radix_evict.policies.registry import Registry, registry
from radix_evict.sglang import legacy_events, native, routing, strategies, unified_events
from radix_evict.sglang.patching import Changes, Patch, cancel, when_imported

logger = logging.getLogger("radix_evict.sglang")


@dataclass
class Installed:
    """What :func:`register` did in this process."""

    added_policies: tuple[str, ...]  # strategies SGLang did not have
    added_choices: tuple[str, ...]  # names added to --radix-eviction-policy
    changes: Changes = field(default_factory=Changes, repr=False)
    pending: list[tuple[str, Patch]] = field(default_factory=list, repr=False)
    patched_modules: list[str] = field(default_factory=list)


_lock = threading.RLock()
_installed: Installed | None = None


def register() -> None:
    """Entry point for SGLang's ``load_plugins()``: make radix-evict's policies usable."""
    global _installed
    with _lock:
        if _installed is not None:
            return
        try:
            _installed = _install(registry)
        except Exception:
            logger.exception(
                "radix-evict's SGLang plugin failed; SGLang runs without radix-evict's policies"
            )


def installed() -> Installed | None:
    """What :func:`register` did in this process (None: not run, or it failed)."""
    return _installed


def uninstall() -> None:
    """Put every SGLang object the plugin changed back as it was (tests; never needed live)."""
    global _installed
    with _lock:
        if _installed is None:
            return
        for module_name, patch in _installed.pending:
            cancel(module_name, patch)
        _installed.changes.undo_all()
        _installed = None


def _install(reg: Registry) -> Installed:
    names = reg.choices()
    for failure in reg.failures:
        logger.warning("radix-evict: a policy package failed to load, skipped: %s", failure)
    choices_module = importlib.import_module(native.CHOICES_MODULE)  # a plain list: cheap
    offered = list(choices_module.RADIX_EVICTION_POLICY_CHOICES)
    added_choices = tuple(n for n in names if n not in offered)
    added_policies = tuple(n for n in names if n not in native.NATIVE_POLICIES)
    inst = Installed(added_policies=added_policies, added_choices=added_choices)
    try:
        _extend_choices(choices_module, added_choices, inst.changes)

        def patch_strategies(module: types.ModuleType) -> None:
            _patch_strategies(module, added_policies, reg, inst)

        def patch_routing(module: types.ModuleType) -> None:
            _patch_routing(module, inst)

        def patch_python_core(module: types.ModuleType) -> None:
            _patch_python_core(module, inst)

        def patch_legacy_tree(module: types.ModuleType) -> None:
            _patch_legacy_tree(module, inst)

        def patch_unified_cache(module: types.ModuleType) -> None:
            _patch_unified_cache(module, inst)

        for module_name, patch in (
            (native.STRATEGIES_MODULE, patch_strategies),
            (native.TREE_CORE_REGISTRY_MODULE, patch_routing),
            (native.PYTHON_TREE_CORE_MODULE, patch_python_core),
            (native.LEGACY_TREE_MODULE, patch_legacy_tree),
            (native.UNIFIED_CACHE_MODULE, patch_unified_cache),
        ):
            inst.pending.append((module_name, patch))
            when_imported(module_name, patch)
    except Exception:
        for pending_module, pending_patch in inst.pending:
            cancel(pending_module, pending_patch)
        inst.changes.undo_all()
        raise
    logger.info(
        "radix-evict: SGLang now accepts --radix-eviction-policy %s (added: %s; "
        "radix-evict validates every policy's --radix-eviction-policy-config)",
        "|".join([*offered, *added_choices]),
        ", ".join(added_policies) or "none",
    )
    return inst


def _extend_choices(module: types.ModuleType, names: tuple[str, ...], changes: Changes) -> None:
    if not names:
        return
    module.add_radix_eviction_policy_choices(list(names))  # SGLang's own extension point
    choices = module.RADIX_EVICTION_POLICY_CHOICES

    def undo() -> None:
        for n in names:
            if n in choices:
                choices.remove(n)

    changes.on_undo(undo)


def _guarded(what: str, inst: Installed) -> bool:
    """Patches run inside SGLang's import of a module: never let them break it."""
    if what in inst.patched_modules:
        return False
    inst.patched_modules.append(what)
    return True


def _patch_strategies(
    module: types.ModuleType, added: tuple[str, ...], reg: Registry, inst: Installed
) -> None:
    if not _guarded(module.__name__, inst) or _installed_changes_gone(inst):
        return
    try:
        factories = module._EVICTION_POLICY_FACTORIES
        for name in native.NATIVE_POLICIES:
            current = factories.get(name)
            if current is not None and not hasattr(current, "radix_evict_policy"):
                inst.changes.set_item(
                    factories, name, strategies.validated_native(name, current, reg)
                )
        for name in added:
            if name in factories:
                logger.warning(
                    "radix-evict: SGLang already has a strategy %r (another plugin?); kept it",
                    name,
                )
                continue
            inst.changes.set_item(factories, name, strategies.bridged(name, reg))
    except Exception:
        logger.exception("radix-evict: could not extend SGLang's eviction strategies")


def _patch_routing(module: types.ModuleType, inst: Installed) -> None:
    if not _guarded(module.__name__, inst) or _installed_changes_gone(inst):
        return
    try:
        original = module._rust_fallback_reason
        inst.changes.set_attr(
            module, "_rust_fallback_reason", routing.with_policy_fallback(original)
        )
    except Exception:
        logger.exception("radix-evict: could not route its policies to SGLang's Python core")


def _patch_python_core(module: types.ModuleType, inst: Installed) -> None:
    if not _guarded(module.__name__, inst) or _installed_changes_gone(inst):
        return
    try:
        core = module.UnifiedTreeCore
        inst.changes.set_attr(core, "__init__", routing.keep_depths(core.__init__))
        unified_events.install(core, inst.changes)
    except Exception:
        logger.exception("radix-evict: could not enable node depths and tree events in "
                         "SGLang's Python core")


def _patch_legacy_tree(module: types.ModuleType, inst: Installed) -> None:
    if not _guarded(module.__name__, inst) or _installed_changes_gone(inst):
        return
    try:
        legacy_events.install(module, inst.changes)
    except Exception:
        logger.exception("radix-evict: could not deliver tree events in SGLang's legacy tree")


def _patch_unified_cache(module: types.ModuleType, inst: Installed) -> None:
    if not _guarded(module.__name__, inst) or _installed_changes_gone(inst):
        return
    try:
        unified_events.install_checkpoint(module.UnifiedRadixCache, inst.changes)
    except Exception:
        logger.exception("radix-evict: could not pass request contexts to SGLang's unified "
                         "tree's checkpoints")


def _installed_changes_gone(inst: Installed) -> bool:
    """A patch that fires after :func:`uninstall` (a late import) must do nothing."""
    return _installed is not None and _installed is not inst
