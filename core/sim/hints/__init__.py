"""Hint models: "what if clients sent this", derived from a trace that carries no hints.

See :mod:`radix_evict.sim.hints.spec` (what ``--hints`` asks for),
:mod:`radix_evict.sim.hints.truth` (each hint's true value, from the trace) and
:mod:`radix_evict.sim.hints.model` (coverage, error, and the workload that hands
the hints to the policies through ``RequestContext``). docs/hints.md has the figures.
"""

from __future__ import annotations

from radix_evict.sim.hints.model import WHAT_IF, hinted, hints_of, sent_hints, with_hints
from radix_evict.sim.hints.spec import (
    HINT_KINDS,
    NEXT_REQUEST,
    SESSION_END,
    HintSpec,
    HintSpecError,
    parse_hint,
    parse_hints,
)
from radix_evict.sim.hints.truth import HintUnavailable

__all__ = [
    "HINT_KINDS",
    "NEXT_REQUEST",
    "SESSION_END",
    "WHAT_IF",
    "HintSpec",
    "HintSpecError",
    "HintUnavailable",
    "hinted",
    "hints_of",
    "parse_hint",
    "parse_hints",
    "sent_hints",
    "with_hints",
]
