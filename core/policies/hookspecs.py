"""Hook specifications a policy package implements (pluggy project ``radix_evict``).

A package declares an entry point in group ``radix_evict.policies`` that names
a module (or object) with ``@hookimpl`` functions. The built-in policies are
registered the same way, through the same group (entry point ``builtin``).

radix-evict calls each plugin's hooks separately, built-ins first and then
the others in a stable order (by distribution, then entry point), once per
process and only when a policy is first needed. A plugin counts as a whole:
if its import or any of its hooks raises, nothing it registered or added is
kept, the failure is recorded with its distribution, version and entry point
(``radix-evict list`` shows it), and the other plugins load as usual.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from radix_evict.policies.spec import PolicySpec

PROJECT = "radix_evict"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register eviction policies.

    :param register: call it once per policy with a
        :class:`radix_evict.PolicySpec` (name, policy class, config model,
        summary, hidden flag). It raises
        :class:`radix_evict.errors.PolicyRegistrationError` for an invalid
        spec, e.g. a config model that would let unknown keys through; let
        it propagate (the plugin is then recorded as failed).

    Registering does not put a policy on the ``--policy`` choice list; use
    :func:`radix_evict_extend_choices` for that. A name that an earlier
    plugin (built-ins first) already registered is refused: the first
    registration is kept, the conflict names both distributions, and asking
    for that name fails at startup until one of them is removed.
    """


@hookspec
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Add registered policy names to the public ``--policy`` choice list.

    :param extend: call it with one or more policy names (strings, or
        iterables of strings). A name must be registered, by any plugin, by
        the time loading finishes; otherwise it is reported and left out.

    The list starts as ``lru, lfu, slru, priority, tlru`` (SGLang's choices).
    Hidden policies (``fifo``, ``mru``, ``filo`` among the built-ins) become
    valid ``--policy`` choices only after some package extends the list with
    them.
    """
