"""Hook specifications a policy package implements (pluggy project ``radix_evict``).

A package declares an entry point in group ``radix_evict.policies`` that names
a module with ``@hookimpl`` functions. The built-in policies are registered the
same way, through the same group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from radix_evict.registry import PolicySpec

PROJECT = "radix_evict"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def radix_evict_register_policies(register: Callable[[PolicySpec], None]) -> None:
    """Register eviction policies.

    :param register: call it once per policy with a
        :class:`radix_evict.PolicySpec` (name, policy class, config model,
        summary, hidden flag).

    Called once per process, lazily, the first time the registry is used.
    A name that another package already registered is refused with an error
    that names both distributions; built-in names cannot be shadowed.
    """


@hookspec
def radix_evict_extend_choices(extend: Callable[..., None]) -> None:
    """Add registered policy names to the public choice list.

    :param extend: call it with one or more policy names. A name must be
        registered (by any package) by the time the registry finishes loading.

    The public list starts as ``lru, lfu, slru, priority, tlru``. Hidden
    policies (``fifo``, ``mru``, ``filo`` among the built-ins) become valid
    ``--policy`` choices only after some package extends the list with them.
    """
