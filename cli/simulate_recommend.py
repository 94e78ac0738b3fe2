"""The recommendation on the command line: the core's sentence (:mod:`radix_evict.sim.recommend`)
printed, and a refusal (exit 1) when no replay served a request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radix_evict.sim.recommend import NOTHING_SERVED, RULE, Recommendation, recommend
from radix_evict.sim.winner import NothingServedError, choose_winner

from . import output
from .errors import EXIT_INVALID, CliError

__all__ = ["NOTHING_SERVED", "RULE", "Recommendation", "choose_winner", "print_recommendation",
           "recommend", "recommend_served"]


def recommend_served(results: Sequence[Any]) -> Recommendation:
    """The core's winner, explained; a refusal (exit 1) when no replay served a request."""
    try:
        return recommend(results)
    except NothingServedError:
        raise CliError(NOTHING_SERVED, EXIT_INVALID) from None


def print_recommendation(rec: Recommendation, prefix: str = "") -> None:
    output.stdout().print(f"{prefix}Recommendation: run {rec.policy}: {rec.reason}.",
                          markup=False, highlight=False)
