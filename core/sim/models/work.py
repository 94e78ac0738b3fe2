"""Prefill work per component: what recomputing an uncached span costs each kind of layer.

A full-attention layer pairs every new token with every earlier one; a
sliding-window layer only with the ``window`` tokens before it; a recurrent layer
does work in proportion to the new tokens alone. Counted in layer x attention
pairs (and layer x tokens for the recurrent ones), so a timed cost model can
charge each component what it costs. Not yet wired into the timed replay: the
hybrid replays report these sums beside their hit rates.
"""

from __future__ import annotations

from dataclasses import dataclass

from radix_evict.cache.hybrid.layout import HybridLayout


@dataclass(frozen=True)
class PrefillWork:
    full_pairs: int  # full-attention layers x (new token, earlier token) pairs
    window_pairs: int  # window layers x pairs inside the window
    recurrent_tokens: int  # recurrent layers x new tokens


def full_pairs(cached: int, new: int) -> int:
    """(new token, earlier or same token) pairs when ``new`` tokens follow ``cached``."""
    return new * cached + new * (new + 1) // 2


def window_pairs(cached: int, new: int, window: int) -> int:
    """The same pairs, each token seeing at most ``window`` tokens (itself included)."""
    a, b = cached, cached + new
    edge = min(b, window)  # positions p < window see p + 1 tokens
    ramp = (edge * (edge + 1) - a * (a + 1)) // 2 if edge > a else 0
    return ramp + window * max(0, b - max(a, window))


def prefill_work(layout: HybridLayout, cached: int, new: int) -> PrefillWork:
    """What recomputing ``new`` tokens after ``cached`` costs each of ``layout``'s groups."""
    if cached < 0 or new < 0:
        raise ValueError(f"cached and new must be >= 0, got {cached} and {new}")
    full = layout.group("full")
    swa = layout.group("swa")
    mamba = layout.group("mamba")
    return PrefillWork(
        full_pairs=(full.layers if full else 0) * full_pairs(cached, new),
        window_pairs=(swa.layers * window_pairs(cached, new, swa.window or 0)) if swa else 0,
        recurrent_tokens=(mamba.layers * new) if mamba else 0,
    )
