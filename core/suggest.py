""""Did you mean": the one near-miss finder every error message uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "suggest"]

CUTOFF = 0.6  # difflib's similarity ratio; 0.6 catches one typo in a short name


def suggest(word: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The candidate closest to ``word`` (case-insensitive), or None if none is close."""
    lowered = {c.lower(): c for c in candidates}
    hit = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[hit[0]] if hit else None


def did_you_mean(word: str, candidates: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """``did you mean 'x'?`` for a near miss, else None."""
    best = suggest(word, candidates, cutoff)
    return f"did you mean {best!r}?" if best is not None and best != word else None
