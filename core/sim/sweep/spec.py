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
    timing: true              # the timed replay, with its axes and options:
    max_running: [64, 256]
    rate: [2, 4, 8]           # requests per second (or "2..8*2")
    cost_model: [llama3-8b-h100, my-gpu.toml]  # presets, or files relative to the grid file
    slo_ttft: 500             # one value for every cell: slo_ttft, slo_tpot (ms), time_scale,
    time_scale: 1             # chunked_prefill_size, concurrency (instead of rate)
    objective: ttft-p99       # what the summary ranks by: hit-rate, ttft-p99 or slo
    hidden: true              # accept hidden policies (fifo, mru, filo) as baselines
    host_tokens: [0, 1M, 2M]  # a host tier (SGLang's HiCache); 0: none. Or instead:
    hicache_ratio: [1, 2]     #   the host sized from the pool, as SGLang's --hicache-ratio
    write_policy: [write_through, write_back]
    host_policy: [device, lfu]  # what ranks host leaves; device (default): the device policy
    host_config: {lfu: {}}    # a config per host policy (checked strictly)
    write_threshold: 2        # one value: the write-through policies' backup threshold
    replicas: [1, 2, 4]       # with timing: a fleet of N replicas behind a router (or "1..8*2")
    router: [round_robin, 'cache_aware={"cache_threshold": 0.5}']  # NAME or NAME=JSON
    model_arch: [gpt-oss-120b]  # a hybrid model's cache; kv_memory: 40GiB, swa_full_tokens_ratio,
                                # mamba_full_memory_ratio: its axes too (hybrid_axes)

A list is taken item by item; a string is read with the command line's
syntax (:mod:`radix_evict.sim.sweep.values`). Options given on the command
line replace the file's axis of the same name (``-g`` replaces one key;
``host_tokens`` and ``hicache_ratio`` are one axis, the host size, so either
replaces both; ``host_config`` is merged per host policy).

``grids`` lists several grids swept as one (one plan, one result file)::

    policies: [lru, slru]     # the keys above: what every grid shares
    grids:
      - {traces: [a.jsonl], page_size: 512, pool_tokens: [2M, 4M], oracle: true}
      - {workloads: [chat]}   # its own default pool and page size
      - {traces: [a.jsonl], page_size: 512, pool_tokens: [2M, 4M], timing: true}

Each entry takes the keys above but ``grids`` and ``objective`` (the
summary's, one for the sweep); its keys replace the shared ones, and the
command line's options replace both (:meth:`GridParts.over`). A cell that two
grids list runs once.
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

from radix_evict.cache.host_tier import DEFAULT_WRITE_POLICY, WRITE_BACK
from radix_evict.inputs import CONFIG_BYTES, InputFileError, read_text
from radix_evict.policies.contract import PolicyConfig
from radix_evict.sim.runs import default_policies
from radix_evict.sim.sweep.fleet_axes import FleetAxes, make_fleet_axes, read_fleet_keys
from radix_evict.sim.sweep.grid import (
    DEVICE_POLICY,
    Grid,
    HostAxes,
    PolicyAxes,
    TimingAxes,
    cost_model_key,
)
from radix_evict.sim.sweep.hybrid_axes import HYBRID_KEYS, make_hybrid_axes, read_hybrid_keys
from radix_evict.sim.sweep.sources import make_sources
from radix_evict.sim.sweep.values import (
    SweepValueError,
    parse_counts,
    parse_numbers,
    parse_values,
    split_top_level,
)
from radix_evict.sim.timed.cost import (
    DEFAULT_COST_MODEL,
    CostModel,
    CostModelError,
    load_cost_model,
    preset_names,
)
from radix_evict.sim.workloads import DEFAULT_WORKLOAD

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Param = tuple[str | None, str, Any]  # (scope, key, value): --param [SCOPE.]KEY=VALUE
# The timed replay's keys (a grid file's names; the command line's are --max-running, ...).
TIMING_KEYS = ("timing", "max_running", "rate", "cost_model", "concurrency", "time_scale",
               "slo_ttft", "slo_tpot", "chunked_prefill_size", "objective")
# The host tier's keys (the command line's --host-tokens, --hicache-ratio, ...).
HOST_KEYS = ("host_tokens", "hicache_ratio", "write_policy", "host_policy", "host_config",
             "write_threshold", "admission")
FLEET_KEYS = ("replicas", "router")  # a fleet (timed): --replicas, --router
FILE_KEYS = ("policies", "pool_tokens", "page_size", "workloads", "traces", "params", "seeds",
             "oracle", "hidden", *TIMING_KEYS, *HOST_KEYS, *FLEET_KEYS, *HYBRID_KEYS, "grids")
# What one entry of ``grids`` may set: everything but the list itself and the summary's
# objective (one for the whole sweep).
GRID_ENTRY_KEYS = tuple(k for k in FILE_KEYS if k not in ("grids", "objective"))


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
    hidden: bool | None = None  # accept registered policies that are not --policy choices
    # The timed replay: on or off, its three axes, the options every cell shares, and what
    # the summary ranks by (read by the front end; the grid does not need it).
    timing: bool | None = None
    max_running: list[int] | None = None
    rates: list[float] | None = None
    cost_models: list[str | CostModel] | None = None
    concurrency: int | None = None
    time_scale: float | None = None
    slo_ttft: float | None = None
    slo_tpot: float | None = None
    chunked_prefill_size: int | None = None
    objective: str | None = None
    # The host tier (SGLang's HiCache): sizes in tokens (0: none) or as ratios (one of the
    # two), write policies, host policies (None: the device policy), each host policy's
    # config as given (a mapping or JSON text), and one write threshold for every cell.
    host_tokens: list[int] | None = None
    hicache_ratios: list[float] | None = None
    write_policies: list[str] | None = None
    host_policies: list[str | None] | None = None
    host_configs: dict[str, Any] | None = None
    write_threshold: int | None = None
    admissions: list[str] | None = None  # host-tier admission policies (an axis; none: none)
    # A fleet (timed grids): replica counts, and routers with their configs as given.
    replicas: list[int] | None = None
    routers: list[tuple[str, dict[str, Any] | None]] | None = None
    # A hybrid model (hybrid_axes): architectures, KV budgets, the two split ratios.
    model_archs: list[str] | None = None
    kv_memories: list[str] | None = None
    swa_ratios: list[float] | None = None
    mamba_ratios: list[float] | None = None
    # Several grids swept as one (a grid file's ``grids``): each entry's own axes, over
    # these (the shared ones); None for one grid. See :meth:`expand`.
    grids: list[GridParts] | None = None

    def timing_given(self) -> list[str]:
        """The timed-replay options these parts set (their grid file names), but ``timing``."""
        names = {"rates": "rate", "cost_models": "cost_model"}
        return [names.get(f, f) for f in ("max_running", "rates", "cost_models", "concurrency",
                                          "time_scale", "slo_ttft", "slo_tpot",
                                          "chunked_prefill_size")
                if getattr(self, f) is not None]

    def host_given(self) -> list[str]:
        """The host-tier options these parts set (their grid file names), but the size."""
        names = {"write_policies": "write_policy", "host_policies": "host_policy",
                 "host_configs": "host_config", "admissions": "admission"}
        return [names.get(f, f) for f in ("write_policies", "host_policies", "host_configs",
                                          "write_threshold", "admissions")
                if getattr(self, f) is not None]

    def over(self, base: GridParts) -> GridParts:
        """These parts where given, ``base``'s elsewhere; ``vary`` merged key by key.

        When ``base`` lists several grids, what these parts give replaces each
        grid's own value too (the command line's options win over a grid file's
        every grid). ``host_tokens`` and ``hicache_ratios`` are one axis (the
        host size): giving either replaces both; ``host_configs`` merge per
        host policy.
        """
        merged = {f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                  else getattr(base, f.name) for f in dataclasses.fields(self)
                  if f.name not in ("vary", "grids")}
        if self.host_tokens is not None or self.hicache_ratios is not None:
            merged["host_tokens"], merged["hicache_ratios"] = self.host_tokens, self.hicache_ratios
        if self.host_configs is not None and base.host_configs is not None:
            merged["host_configs"] = {**base.host_configs, **self.host_configs}
        vary = {p: dict(keys) for p, keys in base.vary.items()}
        for p, keys in self.vary.items():
            vary.setdefault(p, {}).update(keys)
        mine = dataclasses.replace(self, grids=None)
        grids = ([mine.over(g) for g in base.grids] if base.grids is not None
                 else self.grids)
        return GridParts(**merged, vary=vary, grids=grids)

    def expand(self) -> list[GridParts]:
        """One GridParts per grid: each entry of ``grids`` over the shared parts, or self."""
        if self.grids is None:
            return [self]
        shared = dataclasses.replace(self, grids=None)
        return [g.over(shared) for g in self.grids]


def make_grids(parts: GridParts) -> list[Grid]:
    """Every grid ``parts`` describe (several with ``grids``), each as :func:`make_grid`."""
    return [make_grid(p) for p in parts.expand()]


def make_grid(parts: GridParts) -> Grid:
    """The grid of ``parts``, with defaults: the registry's own choices, ``chat``, seed 0.

    ``parts`` must describe one grid (:meth:`GridParts.expand` splits several).
    """
    if parts.grids is not None:
        raise SweepValueError("several grids: expand them first (make_grids)")
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
    timing, host, fleet = timing_axes(parts), host_axes(parts), fleet_axes(parts)
    if timing is not None and host is not None:
        for model in timing.cost_models:
            if model.transfer is None:
                raise SweepValueError(
                    f"cost_model {model.name}: no [transfer] table (kv_bytes_per_token, "
                    "host_gbps); a timed replay with a host tier needs one to time its copies")
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
        timing=timing,
        hidden=bool(parts.hidden),
        host=host,
        fleet=fleet,
        hybrid=make_hybrid_axes(parts.model_archs, parts.kv_memories, parts.swa_ratios,
                                parts.mamba_ratios,
                                hosts=[] if host is None else
                                [h for h in host.points() if h is not None]),
    )


def timing_axes(parts: GridParts) -> TimingAxes | None:
    """The timing axes ``parts`` ask for (None untimed); SweepValueError names a bad key.

    Every point is checked as the timed replay will build it, so no cell fails
    later for a value known now. Two different cost models may not share a
    name: rows and tables name a model by it.
    """
    given = parts.timing_given()
    if not parts.timing:
        if given:
            raise SweepValueError(f"{', '.join(given)}: timed-replay options; set timing "
                                  "(--timing) to use them")
        return None
    models: dict[str, tuple[CostModel, str]] = {}
    for spec in parts.cost_models or [DEFAULT_COST_MODEL]:
        try:
            model = load_cost_model(spec)
        except CostModelError as exc:
            raise SweepValueError(f"cost_model: {exc}") from None
        where = spec if isinstance(spec, str) else model.name
        seen = models.get(model.name)
        if seen is not None and cost_model_key(seen[0]) != cost_model_key(model):
            raise SweepValueError(
                f"cost_model: {seen[1]} and {where} are different models both named "
                f"{model.name!r}; give each its own name (rows and tables name a model by it)")
        models.setdefault(model.name, (model, where))
    for name, values in (("max_running", parts.max_running),
                         ("chunked_prefill_size", [parts.chunked_prefill_size]),
                         ("concurrency", [parts.concurrency])):
        for v in values or []:
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise SweepValueError(f"{name}: expected whole numbers, got {v!r}")
    shared: dict[str, Any] = {"concurrency": parts.concurrency,
                              "slo_ttft_ms": parts.slo_ttft, "slo_tpot_ms": parts.slo_tpot}
    if parts.time_scale is not None:
        shared["time_scale"] = parts.time_scale
    if parts.chunked_prefill_size is not None:
        shared["chunked_prefill_size"] = parts.chunked_prefill_size
    axes = TimingAxes(
        cost_models=tuple(m for m, _ in models.values()),
        max_running=tuple(dict.fromkeys(parts.max_running or [None])),  # type: ignore[list-item]
        rates=tuple(dict.fromkeys(parts.rates or [None])),  # type: ignore[list-item]
        **shared,
    )
    for point in axes.points():
        try:
            point.spec(0)
        except ValueError as exc:
            raise SweepValueError(f"timing: {exc}") from None
    return axes


def fleet_axes(parts: GridParts) -> FleetAxes | None:
    """The fleet axes ``parts`` ask for (None: one server); SweepValueError names a bad key."""
    return make_fleet_axes(parts.replicas, parts.routers, timing=bool(parts.timing))


def host_axes(parts: GridParts) -> HostAxes | None:
    """The host-tier axes ``parts`` ask for (None: one tier); SweepValueError names a bad key.

    Each host policy's config is validated once by the registry (its frozen
    config is what the cells carry), and every point is checked as the
    replay will build it (``HostTierSpec``'s own checks). The write threshold
    applies to the write-through policies: ``write_back`` writes on device
    eviction, so a threshold with only ``write_back`` is refused.
    """
    from radix_evict.sim.sweep.check import parse_config

    given = parts.host_given()
    if parts.host_tokens is None and parts.hicache_ratios is None:
        if given:
            raise SweepValueError(f"{', '.join(given)}: host-tier options; set host_tokens or "
                                  "hicache_ratio (--host-tokens, --hicache-ratio) to use them")
        return None
    if parts.host_tokens is not None and parts.hicache_ratios is not None:
        raise SweepValueError("host_tokens and hicache_ratio both size the host tier: give one")
    if not (parts.host_tokens or parts.hicache_ratios):
        raise SweepValueError("host_tokens, hicache_ratio: no values")
    writes = list(dict.fromkeys(parts.write_policies or [DEFAULT_WRITE_POLICY]))
    if parts.write_threshold is not None and all(w == WRITE_BACK for w in writes):
        raise SweepValueError("write_threshold is for write_through and "
                              "write_through_selective (write_back writes on device eviction)")
    names = list(dict.fromkeys(None if p == DEVICE_POLICY else p
                               for p in parts.host_policies or [None]))
    configs = dict(parts.host_configs or {})
    stray = [p for p in configs if p not in names]
    if stray:
        why = ("the device policy keeps its own config" if stray[0] == DEVICE_POLICY
               else f"not among the host policies ({', '.join(n or DEVICE_POLICY for n in names)})")
        raise SweepValueError(f"host_config.{stray[0]}: {why}")
    policies: list[tuple[str | None, PolicyConfig | None]] = []
    for name in names:
        if name is None:
            policies.append((None, None))
            continue
        parsed = parse_config(name, configs.get(name))
        if isinstance(parsed, list):
            raise SweepValueError(f"host_policy {name!r}: "
                                  + "; ".join(str(p) for p in parsed))
        policies.append((name, parsed))
    axes = HostAxes(
        tokens=tuple(dict.fromkeys(parts.host_tokens or [])),
        ratios=tuple(dict.fromkeys(float(r) for r in parts.hicache_ratios or [])),
        write_policies=tuple(writes), policies=tuple(policies),
        write_threshold=parts.write_threshold, admissions=_admissions(parts.admissions),
    )
    for t in axes.tokens:
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise SweepValueError(f"host_tokens: expected whole numbers >= 0, got {t!r}")
    try:
        axes.points()  # each point checked as the replay will build it
    except ValueError as exc:
        raise SweepValueError(str(exc)) from None
    return axes


def _admissions(names: list[str] | None) -> tuple[str | None, ...]:
    """The admission axis (None: none); SweepValueError names an unknown policy."""
    from radix_evict.cache.admission import ADMISSION_POLICIES

    for name in names or ():
        if name not in ADMISSION_POLICIES:
            raise SweepValueError(f"admission {name!r}: use {', '.join(ADMISSION_POLICIES)}")
    return tuple(dict.fromkeys(names)) if names else (None,)


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
    parts = _parts(path, data)
    if "grids" in data:
        parts.grids = _grid_entries(path, data["grids"])
    return parts


def _grid_entries(path: Path, value: Any) -> list[GridParts]:
    """A grid file's ``grids``: a non-empty list of mappings of :data:`GRID_ENTRY_KEYS`."""
    if not isinstance(value, list) or not value:
        raise SweepValueError(f"{path}: grids: expected a list of grids (mappings of "
                              f"{', '.join(GRID_ENTRY_KEYS)})")
    out = []
    for i, entry in enumerate(value, 1):
        where = f"{path}: grids[{i}]"
        if not isinstance(entry, Mapping):
            raise SweepValueError(f"{where}: expected a mapping of {', '.join(GRID_ENTRY_KEYS)}")
        bad = [k for k in entry if k not in GRID_ENTRY_KEYS]
        if bad:
            why = ("one for the whole sweep: give it beside grids" if bad[0] == "objective"
                   else "grids do not nest" if bad[0] == "grids"
                   else f"keys: {', '.join(GRID_ENTRY_KEYS)}")
            raise SweepValueError(f"{where}: key {bad[0]!r} ({why})")
        out.append(_parts(path, entry, where))
    return out


def _parts(path: Path, data: Mapping[str, Any], at: str | None = None) -> GridParts:
    """The keys of a grid file (or of one of its ``grids``, named by ``at`` in messages)."""
    where = f"{at or path}:"
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
    for key, name in (("oracle", "references"), ("hidden", "hidden")):
        if key in data:
            if not isinstance(data[key], bool):
                raise SweepValueError(f"{where} {key}: expected true or false")
            setattr(parts, name, data[key])
    params = data.get("params")
    if params is not None:
        if not isinstance(params, Mapping):
            raise SweepValueError(f"{where} params: expected a mapping KEY: VALUE")
        parts.params = [_param(str(k), v) for k, v in params.items()]
    _timing_parts(path, data, parts, where)
    _host_parts(data, parts, where)
    _fleet_parts(data, parts, where)
    for name, values in read_hybrid_keys(data, where).items():
        setattr(parts, name, values)
    return parts


def _fleet_parts(data: Mapping[str, Any], parts: GridParts, where: str) -> None:
    """A grid file's fleet keys (``replicas``, ``router``), read by ``fleet_axes``."""
    replicas, routers = read_fleet_keys(data, where)
    parts.replicas = replicas if replicas is not None else parts.replicas
    parts.routers = routers if routers is not None else parts.routers


def _host_parts(data: Mapping[str, Any], parts: GridParts, where: str) -> None:
    """The host tier's keys of a grid file (one of its ``grids`` too)."""
    if "host_tokens" in data:
        parts.host_tokens = parse_counts(data["host_tokens"], f"{where} host_tokens")
    if "hicache_ratio" in data:
        parts.hicache_ratios = [float(r) for r in parse_numbers(data["hicache_ratio"],
                                                                f"{where} hicache_ratio")]
    if "write_policy" in data:
        parts.write_policies = _listed_names(data["write_policy"], f"{where} write_policy")
    if "admission" in data:
        parts.admissions = _listed_names(data["admission"], f"{where} admission")
    if "host_policy" in data:
        value = data["host_policy"]
        items = value if isinstance(value, list) else [value]
        parts.host_policies = [None if v is None else n for v in items
                               for n in ([None] if v is None
                                         else _listed_names(v, f"{where} host_policy"))]
    if "host_config" in data:
        value = data["host_config"]
        if not isinstance(value, Mapping) or not all(
                v is None or isinstance(v, Mapping) for v in value.values()):
            raise SweepValueError(f"{where} host_config: expected a mapping of host policy -> "
                                  "its config ({lfu: {}, slru: {protected_threshold: 2}})")
        parts.host_configs = {str(k): dict(v) if v else None for k, v in value.items()}
    if "write_threshold" in data:
        (n,) = _one(parse_counts(data["write_threshold"], f"{where} write_threshold"),
                    f"{where} write_threshold")
        parts.write_threshold = n


def _listed_names(value: Any, what: str) -> list[str]:
    """Names as a list, or one string of them split on commas (``write_through,write_back``)."""
    if isinstance(value, str):
        names = [n for n in split_top_level(value) if n]
        if names:
            return names
    return _names(value, what)


def _timing_parts(path: Path, data: Mapping[str, Any], parts: GridParts, where: str) -> None:
    """The timed replay's keys of a grid file; a cost model file is relative to the grid file."""
    if "timing" in data:
        if not isinstance(data["timing"], bool):
            raise SweepValueError(f"{where} timing: expected true or false")
        parts.timing = data["timing"]
    if "max_running" in data:
        parts.max_running = parse_counts(data["max_running"], f"{where} max_running")
    if "rate" in data:
        parts.rates = [float(r) for r in parse_numbers(data["rate"], f"{where} rate")]
    if "cost_model" in data:
        value = data["cost_model"]
        names = (split_top_level(value) if isinstance(value, str)
                 else _names(value, f"{where} cost_model"))
        presets = set(preset_names())
        parts.cost_models = [n if n in presets or os.path.isabs(n)
                             else os.path.normpath(path.parent / n) for n in names if n]
    for key in ("concurrency", "chunked_prefill_size"):
        if key in data:
            (n,) = _one(parse_counts(data[key], f"{where} {key}"), f"{where} {key}")
            setattr(parts, key, n)
    for key in ("time_scale", "slo_ttft", "slo_tpot"):
        if key in data:
            (x,) = _one(parse_numbers(data[key], f"{where} {key}"), f"{where} {key}")
            setattr(parts, key, float(x))
    if "objective" in data:
        if not isinstance(data["objective"], str):
            raise SweepValueError(f"{where} objective: expected hit-rate, ttft-p99 or slo")
        parts.objective = data["objective"]


def _one(values: list[Any], what: str) -> list[Any]:
    """A key that takes one value (the same for every cell), not a list."""
    if len(values) != 1:
        raise SweepValueError(f"{what}: one value for every cell, got {values!r}")
    return values


def _param(key: str, value: Any) -> Param:
    scope, dot, name = key.rpartition(".")
    return (scope if dot else None, name, value)

