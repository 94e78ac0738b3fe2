"""One spelling per value in a sweep cell's key, so equal cells have equal keys.

A rerun finds the cells its result file already has by their keys
(:attr:`~radix_evict.sim.sweep.cell.Cell.key`): configs are canonical JSON,
numbers one spelling (``2`` and ``2.0`` are the same rate), a cost model its
name and coefficients.
"""

from __future__ import annotations

import json
from typing import Any

from radix_evict.sim.timed.cost import CostModel

__all__ = ["canonical_json", "cost_model_key", "key_number"]


def canonical_json(value: Any) -> str:
    """One spelling per value (sorted keys, no spaces): equal configs give equal keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def cost_model_key(model: CostModel) -> dict[str, Any]:
    """A cost model's identity in cell keys: its name and coefficients (not its ``source``).

    A file whose numbers changed is another model, so its cells are other cells.
    """
    return dict(model.model_dump(exclude={"source"}))


def key_number(value: float | None) -> float | None:
    """One spelling for a number in a key: ``2`` and ``2.0`` are the same rate."""
    return None if value is None else float(value)
