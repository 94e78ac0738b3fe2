"""Every cell checked before any replay starts: a bad key in cell 97 fails in milliseconds.

Configs go through ``registry.parse_config`` (what ``validate`` and
``simulate`` use), once per distinct policy and config, and the frozen config
it returns is what the cells carry to every worker; a problem names the first
cell that has it and how many more share it. Pool and page sizes are checked
here too, so that no cell fails later for a reason known now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from radix_evict.errors import ConfigProblem, PolicyConfigError, ProblemType, RadixEvictError
from radix_evict.policies.contract import PolicyConfig
from radix_evict.policies.registry import registry
from radix_evict.sim.sweep.grid import REFERENCES, Cell, Spot, page_pool
from radix_evict.sim.sweep.values import SweepValueError
from radix_evict.sim.timed.limits import TimedInputError, check_chunk

if TYPE_CHECKING:
    from radix_evict.sim.sweep.grid import Grid


@dataclass(frozen=True)
class CellProblems:
    """What is wrong with one cell's policy or config, and how many cells share it."""

    index: int  # 1-based, in grid order
    total: int
    cell: Spot
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


Pair = tuple[str, str]  # (policy, its config as given, canonical JSON)


def parse_config(policy: str, config: dict[str, Any] | None, extended: bool = False
                 ) -> PolicyConfig | list[ConfigProblem] | None:
    """One (policy, config as given) through the registry: its frozen config, or its problems.

    The policy must be a ``--policy`` choice (with ``extended``, any registered
    policy: the hidden baselines too). No config stays None (the
    policy's defaults, or for a policy whose spec derives one, the config the
    replay derives from each cell's workload).
    """
    try:
        registry.check_choice(policy, extended=extended)
        if config is None:
            return None
        return registry.parse_config(policy, config)
    except PolicyConfigError as exc:
        return list(exc.problems)


def parse_configs(spots: Sequence[Spot], extended: bool = False
                  ) -> dict[Pair, PolicyConfig | None]:
    """Each distinct (policy, config) of ``spots`` validated once; SweepGridError names bad cells.

    A problem names the first cell that has it and how many more share it.
    ``extended`` accepts hidden policies (:func:`parse_config`).
    """
    verdicts: dict[Pair, PolicyConfig | list[ConfigProblem] | None] = {}
    first: dict[Pair, int] = {}
    counts: dict[Pair, int] = {}
    for i, spot in enumerate(spots, 1):
        pair = (spot.policy, spot.config_json)
        counts[pair] = counts.get(pair, 0) + 1
        if pair not in verdicts:
            first[pair] = i
            verdicts[pair] = (None if spot.policy in REFERENCES
                              else parse_config(spot.policy, spot.config, extended))
    found = [
        CellProblems(first[pair], len(spots), spots[first[pair] - 1], tuple(v), counts[pair] - 1)
        for pair, v in verdicts.items() if isinstance(v, list)
    ]
    if found:
        hidden = sorted({p.policy for f in found for p in f.problems
                         if p.type == ProblemType.HIDDEN_POLICY})
        other = []
        if hidden:
            what = "a baseline" if len(hidden) == 1 else "baselines"
            other.append(f"to sweep {', '.join(hidden)} as {what}, add --hidden (in a grid "
                         "file, hidden: true)")
        raise SweepGridError(found, other)
    return {pair: v for pair, v in verdicts.items() if not isinstance(v, list)}


def check_cells(cells: Sequence[Cell]) -> None:
    """Raise SweepGridError naming every cell whose pool or page cannot run; else return."""
    other: list[str] = []
    for i, cell in enumerate(cells, 1):
        if cell.pool_tokens is not None and cell.pool_tokens < cell.page_size:
            other.append(f"cell {i} of {len(cells)} ({cell.describe()}): a pool of "
                         f"{cell.pool_tokens:,} tokens holds no whole page of {cell.page_size}")
        if cell.page_size < 1:
            other.append(f"cell {i} of {len(cells)} ({cell.describe()}): page size must be "
                         ">= 1")
    if other:
        raise SweepGridError([], other)


def merge_notes(grid: Grid, cells: Sequence[Cell]) -> list[str]:
    """What the grid lists twice in effect: configs equal once validated, pools equal in pages."""
    notes: list[str] = []
    runs = [c for c in cells if not c.is_reference]
    for axes in grid.policies:
        listed = len(axes.configs())
        distinct = len({c.config_json for c in runs if c.policy == axes.policy})
        if distinct and distinct < listed:
            notes.append(f"{axes.policy}: the {listed} configs listed are {distinct} distinct "
                         f"config{'s' * (distinct != 1)} once validated; each runs once")
    for page in grid.page_sizes:
        given = [p for p in dict.fromkeys(grid.pool_tokens) if p is not None]
        rounded: dict[int | None, list[int]] = {}
        for p in given:
            rounded.setdefault(page_pool(p, page), []).append(p)
        for pool, sizes in rounded.items():
            if len(sizes) > 1 and pool is not None:
                shown = ", ".join(f"{s:,}" for s in sizes)
                notes.append(f"--pool-tokens {shown} are all {pool:,} tokens in whole pages of "
                             f"{page}: one cell each, not {len(sizes)}")
    if grid.host is not None:
        notes.extend(_host_notes(grid))
    return notes


def _host_notes(grid: Grid) -> list[str]:
    """Host sizes that are no host tier (0, under a page) or equal in whole pages."""
    h = grid.host
    assert h is not None
    notes: list[str] = []
    per_size = len(h.write_policies) * len(h.policies)
    if 0 in h.tokens and per_size > 1:
        notes.append("--host-tokens 0 is no host tier: one cell per policy config, pool and "
                     f"workload, not one per write policy and host policy ({per_size})")
    for page in grid.page_sizes:
        rounded: dict[int, list[int]] = {}
        for t in h.tokens:
            if t > 0:
                rounded.setdefault(t // page * page, []).append(t)
        for tokens, sizes in rounded.items():
            shown = ", ".join(f"{s:,}" for s in sizes)
            if tokens == 0:
                notes.append(f"--host-tokens {shown}: less than a page of {page} tokens, no "
                             "host tier (the one-tier cells)")
            elif len(sizes) > 1:
                notes.append(f"--host-tokens {shown} are all {tokens:,} tokens in whole pages "
                             f"of {page}: one cell each, not {len(sizes)}")
    return notes


def check_timed_cells(grid: Grid) -> None:
    """The timed replay's limits that join two axes, checked for every pair of values in
    ``grid`` before any cell runs (:mod:`radix_evict.sim.timed.limits`): a chunk smaller than
    a page size would otherwise fail its cells one by one, mid-sweep, as error rows.
    SweepValueError names both options."""
    if grid.timing is None:
        return
    chunk = grid.timing.chunked_prefill_size
    for page in grid.page_sizes:
        try:
            check_chunk(chunk, page)
        except TimedInputError as exc:
            raise SweepValueError(f"--chunked-prefill-size {chunk:,} with --page-size "
                                  f"{page:,}: {exc}") from None
