"""From what a user wrote (command line, grid file) to a :class:`~radix_evict.sim.sweep.grid.Grid`.

A grid file (YAML or TOML) has the command line's axes as keys::

    policies:                 # names, or name -> {key: values}
      lru: {}
      slru: {protected_threshold: [1, 2, 4, 8]}
      tlru: {threshold: "512..4096*2", next_prompt_estimate: 512}
    pool_tokens: [1M, 2M, 4M] # or "1M..16M*2"
    page_size: 1              # one value or a list
    workloads: [chat]         # built-in workloads
    traces: [a.jsonl]         # relative to the grid file
    params: {limit: 2000, chat.convs: 50}
    seeds: [0, 1]
    oracle: true              # add the oracle and the ceiling

A list is taken item by item; a string is read with the command line's
syntax (:mod:`radix_evict.sim.sweep.values`). Options given on the command
line replace the file's axis of the same name (``-g`` replaces one key).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from radix_evict.inputs import CONFIG_BYTES, InputFileError, read_text
from radix_evict.sim.runs import default_policies
from radix_evict.sim.sweep.grid import Grid, PolicyAxes
from radix_evict.sim.sweep.sources import make_sources
from radix_evict.sim.sweep.values import SweepValueError, parse_counts, parse_values
from radix_evict.sim.workloads import DEFAULT_WORKLOAD

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Param = tuple[str | None, str, Any]  # (scope, key, value): --param [SCOPE.]KEY=VALUE
FILE_KEYS = ("policies", "pool_tokens", "page_size", "workloads", "traces", "params", "seeds",
             "oracle")


@dataclass
class GridParts:
    """The axes as given; None means "not given here" (a default or the grid file's)."""

    policies: list[str] | None = None
    vary: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    pool_tokens: list[int] | None = None
    page_sizes: list[int] | None = None
    workloads: list[str] | None = None
    traces: list[str] | None = None
    params: list[Param] | None = None
    seeds: list[int] | None = None
    references: bool | None = None  # the oracle and the ceiling

    def over(self, base: GridParts) -> GridParts:
        """These parts where given, ``base``'s elsewhere; ``vary`` merged key by key."""
        merged = {f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                  else getattr(base, f.name) for f in dataclasses.fields(self) if f.name != "vary"}
        vary = {p: dict(keys) for p, keys in base.vary.items()}
        for p, keys in self.vary.items():
            vary.setdefault(p, {}).update(keys)
        return GridParts(**merged, vary=vary)


def make_grid(parts: GridParts) -> Grid:
    """The grid of ``parts``, with defaults: the registry's own choices, ``chat``, seed 0."""
    policies = list(dict.fromkeys(parts.policies or []))
    if policies:
        stray = [p for p in parts.vary if p not in policies]
        if stray:
            raise SweepValueError(
                f"-g {stray[0]}.KEY: {stray[0]!r} is not among the sweep's policies "
                f"({', '.join(policies)}); add -p {stray[0]}")
    else:
        policies = list(parts.vary) or default_policies()
    for p, keys in parts.vary.items():
        for k, values in keys.items():
            if not values:
                raise SweepValueError(f"-g {p}.{k}: no values")
    workloads, traces = parts.workloads or [], parts.traces or []
    if not workloads and not traces:
        workloads = [DEFAULT_WORKLOAD]
    sources = make_sources(list(dict.fromkeys(workloads)), list(dict.fromkeys(traces)),
                           parts.params or [])
    pools = tuple(dict.fromkeys(parts.pool_tokens or [None]))  # type: ignore[list-item]
    for n in (*[p for p in pools if p is not None], *(parts.page_sizes or [])):
        if n < 1:
            raise SweepValueError(f"pool and page sizes must be >= 1, got {n}")
    seeds = tuple(dict.fromkeys(parts.seeds or [0]))
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise SweepValueError(f"seeds must be integers >= 0, got {list(seeds)}")
    return Grid(
        policies=tuple(PolicyAxes.of(p, parts.vary.get(p)) for p in policies),
        sources=tuple(sources),
        pool_tokens=pools,
        page_sizes=tuple(dict.fromkeys(parts.page_sizes or [1])),
        seeds=seeds,
        references=bool(parts.references),
    )


def _values(value: Any, what: str) -> list[Any]:
    """A file value as a list of axis values: lists verbatim, strings in the CLI syntax."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return parse_values(value, what)
    return [value]


def _names(value: Any, what: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(i, str) for i in items):
        raise SweepValueError(f"{what}: expected names, got {value!r}")
    return list(items)


def read_grid_file(path: Path) -> GridParts:
    """Parse a YAML (.yaml/.yml) or TOML (.toml) grid file; errors name the file and key."""
    try:
        text = read_text(path, limit=CONFIG_BYTES, what="a grid file")
    except InputFileError as exc:
        raise SweepValueError(str(exc)) from None
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix.lower() in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise SweepValueError(f"{path}: a grid file ends in .yaml, .yml or .toml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise SweepValueError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None
    except RecursionError:
        raise SweepValueError(f"{path}: nested too deeply to read") from None
    if not isinstance(data, Mapping):
        raise SweepValueError(f"{path}: expected a mapping of {', '.join(FILE_KEYS)}")
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown:
        raise SweepValueError(f"{path}: unknown key {unknown[0]!r} (keys: {', '.join(FILE_KEYS)})")
    return _parts(path, data)


def _parts(path: Path, data: Mapping[str, Any]) -> GridParts:
    where = f"{path}:"
    parts = GridParts()
    pol = data.get("policies")
    if isinstance(pol, Mapping):
        parts.policies = [str(p) for p in pol]
        for p, keys in pol.items():
            if keys is None:
                continue
            if not isinstance(keys, Mapping):
                raise SweepValueError(f"{where} policies.{p}: expected a mapping of config keys")
            parts.vary[str(p)] = {str(k): _values(v, f"{where} policies.{p}.{k}")
                                  for k, v in keys.items()}
    elif pol is not None:
        parts.policies = _names(pol, f"{where} policies")
    if "pool_tokens" in data:
        parts.pool_tokens = parse_counts(data["pool_tokens"], f"{where} pool_tokens")
    if "page_size" in data:
        parts.page_sizes = parse_counts(data["page_size"], f"{where} page_size")
    if "seeds" in data:
        parts.seeds = parse_counts(data["seeds"], f"{where} seeds")
    if "workloads" in data:
        parts.workloads = _names(data["workloads"], f"{where} workloads")
    if "traces" in data:
        base = path.parent
        parts.traces = [os.path.normpath(base / t) if not os.path.isabs(t) else t
                        for t in _names(data["traces"], f"{where} traces")]
    if "oracle" in data:
        if not isinstance(data["oracle"], bool):
            raise SweepValueError(f"{where} oracle: expected true or false")
        parts.references = data["oracle"]
    params = data.get("params")
    if params is not None:
        if not isinstance(params, Mapping):
            raise SweepValueError(f"{where} params: expected a mapping KEY: VALUE")
        parts.params = [_param(str(k), v) for k, v in params.items()]
    return parts


def _param(key: str, value: Any) -> Param:
    scope, dot, name = key.rpartition(".")
    return (scope if dot else None, name, value)

