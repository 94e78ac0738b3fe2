"""Every cell checked before any replay starts: a bad key in cell 97 fails in milliseconds.

Configs go through the registry's strict checks (the ones ``validate`` and
``simulate`` use), once per distinct policy and config; a problem names the
first cell that has it and how many more share it. Pool and page sizes are
checked here too, so that no cell fails later for a reason known now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from radix_evict import registry
from radix_evict.errors import ConfigProblem, PolicyConfigError, RadixEvictError
from radix_evict.sim.sweep.grid import Cell


@dataclass(frozen=True)
class CellProblems:
    """What is wrong with one cell's policy or config, and how many cells share it."""

    index: int  # 1-based, in grid order
    total: int
    cell: Cell
    problems: tuple[ConfigProblem, ...]
    same: int  # further cells with the same policy and config

    def lines(self) -> list[str]:
        more = f" (and {self.same} more cell{'s' if self.same != 1 else ''} with this " \
               "config)" if self.same else ""
        head = f"cell {self.index} of {self.total} ({self.cell.describe()}){more}:"
        return [head, *(f"  - {p}" for p in self.problems)]


class SweepGridError(RadixEvictError, ValueError):
    """Cells that cannot run; raised before any of the grid runs."""

    def __init__(self, found: Sequence[CellProblems], other: Sequence[str] = ()) -> None:
        lines = [line for f in found for line in f.lines()] + list(other)
        super().__init__("\n".join(lines))
        self.found = list(found)
        self.other = list(other)

    @property
    def problems(self) -> list[ConfigProblem]:
        return [p for f in self.found for p in f.problems]


def config_problems(policy: str, config: dict[str, object] | None) -> list[ConfigProblem]:
    """The registry's verdict on one (policy, config) as the CLI offers policies.

    No config for a policy whose spec derives one is fine: the replay derives
    it from each cell's workload.
    """
    try:
        spec = registry.check_choice(policy)
    except PolicyConfigError as exc:
        return list(exc.problems)
    if config is None and spec.derive_config is not None:
        return []
    return registry.validate(policy, config, extended=False)


def check_cells(cells: Sequence[Cell]) -> None:
    """Raise SweepGridError naming every cell that cannot run; return quietly otherwise."""
    verdicts: dict[tuple[str, str], list[ConfigProblem]] = {}
    first: dict[tuple[str, str], int] = {}
    counts: dict[tuple[str, str], int] = {}
    other: list[str] = []
    for i, cell in enumerate(cells, 1):
        pair = (cell.policy, cell.config_json)
        counts[pair] = counts.get(pair, 0) + 1
        if pair not in verdicts and not cell.is_reference:
            verdicts[pair] = config_problems(cell.policy, cell.config)
            first[pair] = i
        if cell.pool_tokens is not None and cell.pool_tokens < cell.page_size:
            other.append(f"cell {i} of {len(cells)} ({cell.describe()}): a pool of "
                         f"{cell.pool_tokens:,} tokens holds no whole page of {cell.page_size}")
        if cell.page_size < 1:
            other.append(f"cell {i} of {len(cells)} ({cell.describe()}): page size must be "
                         ">= 1")
    found = [
        CellProblems(first[pair], len(cells), cells[first[pair] - 1], tuple(problems),
                     counts[pair] - 1)
        for pair, problems in verdicts.items() if problems
    ]
    if found or other:
        raise SweepGridError(sorted(found, key=lambda f: f.index), other)
