"""The public name of the hook specifications (``radix_evict.hookspecs``).

Policy packages implement these hooks; they are defined, with one docstring
each, in :mod:`radix_evict.policies.hookspecs`.
"""

from radix_evict.policies.hookspecs import (
    PROJECT,
    hookimpl,
    hookspec,
    radix_evict_extend_choices,
    radix_evict_register_policies,
)

__all__ = [
    "PROJECT",
    "hookimpl",
    "hookspec",
    "radix_evict_extend_choices",
    "radix_evict_register_policies",
]
