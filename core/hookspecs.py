"""The public name of the hook specifications (``radix_evict.hookspecs``).

Policy packages implement the policy hooks, defined with one docstring each
in :mod:`radix_evict.policies.hookspecs`; router packages implement
``radix_evict_register_routers``, defined in
:mod:`radix_evict.sim.fleet.hookspecs`. One ``hookimpl`` marks either.
"""

from radix_evict.policies.hookspecs import (
    PROJECT,
    hookimpl,
    hookspec,
    radix_evict_extend_choices,
    radix_evict_register_policies,
)
from radix_evict.sim.fleet.hookspecs import radix_evict_register_routers

__all__ = [
    "PROJECT",
    "hookimpl",
    "hookspec",
    "radix_evict_extend_choices",
    "radix_evict_register_policies",
    "radix_evict_register_routers",
]
