"""The host tier a replay gets (SGLang's HiCache): one rule for ``simulate`` and ``sweep``.

Both pass a :class:`~radix_evict.cache.host_tier.HostTierSpec` (a sweep
grid's host points are ones, :mod:`radix_evict.sim.sweep.host_axes`);
:func:`tier_at` says what a replay of a page size does with it: a host tier
that holds no whole page (``--host-tokens 0``) is no host tier, the one-tier
replay, and a size in tokens counts whole pages. A ratio always holds a page.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from radix_evict.cache.host_tier import HostTierSpec

H = TypeVar("H", bound=HostTierSpec)


def tier_at(host: H | None, page_size: int) -> H | None:
    """``host`` for a replay of ``page_size``: None where it holds no whole page, else its
    tokens rounded down to whole pages (the same spec where they already are)."""
    if host is None or host.tokens is None or page_size < 1:
        return host
    tokens = host.tokens // page_size * page_size
    if tokens <= 0:
        return None
    return host if tokens == host.tokens else replace(host, tokens=tokens)
