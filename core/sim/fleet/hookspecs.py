"""The hook a router package implements (pluggy project ``radix_evict``, as the policies').

A package declares an entry point in group ``radix_evict.routers`` naming a
module (or object) with ``@hookimpl`` functions; the built-in routers come
in the same way (entry point ``builtin`` = ``radix_evict.sim.fleet.routers``).
Each plugin's hook runs on its own, built-ins first, once per process and
only when a router is first needed; a plugin that fails to import or raises
is recorded with its distribution and entry point, and nothing it registered
is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from radix_evict.policies.hookspecs import PROJECT
from radix_evict.sim.fleet.router import RouterSpec

__all__ = ["GROUP", "PROJECT", "hookimpl", "hookspec", "radix_evict_register_routers"]

GROUP = "radix_evict.routers"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def radix_evict_register_routers(register: Callable[[RouterSpec], None]) -> None:
    """Register fleet routers.

    :param register: call it once per router with a
        :class:`~radix_evict.sim.fleet.router.RouterSpec` (name, router class,
        config model, summary). It raises
        :class:`radix_evict.errors.PolicyRegistrationError` for an invalid spec
        (a bad name, a class that is no ``Router``, a config model that would
        let unknown keys through); let it propagate (the plugin is then
        recorded as failed).

    A name an earlier plugin (built-ins first) already registered is refused:
    the first registration is kept.
    """
