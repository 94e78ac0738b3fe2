"""``sweep``'s host tier (SGLang's HiCache): its axes and options, checked as ``simulate``'s.

Every value (cli/sweep_options.py reads them) goes
through ``simulate``'s own checker (:func:`~radix_evict.cli.simulate_host.build_host`),
so a value ``simulate`` refuses is refused here with the same message and
exit code; the grid (core's ``make_grid``) then builds the cells.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from radix_evict.cache.host_tier import WRITE_BACK
from radix_evict.sim.sweep import GridParts
from radix_evict.sim.sweep.grid import DEVICE_POLICY
from radix_evict.sim.timed.cost import DEFAULT_COST_MODEL, CostModelError, load_cost_model

from .errors import EXIT_USAGE, CliError
from .simulate_host import build_host, check_host_fits, check_transfer


def _config_text(config: Any) -> str | None:
    """A host config as build_host reads it: JSON text (a grid file's mapping dumped)."""
    if config is None or isinstance(config, str):
        return config
    return json.dumps(dict(config) if isinstance(config, Mapping) else config)


def check_host(parts: GridParts) -> None:
    """simulate's checks (``build_host``) on every value of the merged host options.

    Each size, write policy and host policy (with its config) is checked once,
    the other axes at their first value; the write threshold with each
    write-through policy (with ``write_back`` only where no write-through
    policy is listed: simulate's refusal). A config for a host policy not
    listed, or a threshold below 1 from a grid file, is refused naming the
    option. A timed sweep's cost models need a [transfer] table.
    """
    if parts.write_threshold is not None and parts.write_threshold < 1:
        raise CliError(f"--write-threshold must be >= 1, got {parts.write_threshold}",
                       EXIT_USAGE)
    policies = list(dict.fromkeys(None if p == DEVICE_POLICY else p
                                  for p in parts.host_policies or [None]))
    configs = dict(parts.host_configs or {})
    if DEVICE_POLICY in configs:  # a config for the device policy (no --host-policy): refused
        build_host(host_tokens=parts.host_tokens[0] if parts.host_tokens else None,
                   hicache_ratio=parts.hicache_ratios[0] if parts.hicache_ratios else None,
                   write_policy=None, write_threshold=None, host_policy=None,
                   host_config=_config_text(configs[DEVICE_POLICY]))
    stray = [p for p in configs if p not in policies]
    if stray:
        listed = ", ".join(p or DEVICE_POLICY for p in policies)
        raise CliError(f"--host-config for {stray[0]}, which is not among the host policies "
                       f"({listed}); add --host-policy {stray[0]}", EXIT_USAGE)
    none: list[Any] = [None]
    sizes: dict[str, list[Any]] = {"host_tokens": list(parts.host_tokens or none),
                                   "hicache_ratio": list(parts.hicache_ratios or none)}
    writes = list(parts.write_policies or none)
    through = [w for w in writes if w != WRITE_BACK]
    axes: dict[str, list[Any]] = {**sizes, "write_policy": writes, "host_policy": policies}
    first = {name: values[0] for name, values in axes.items()}
    checks = [first] + [{**first, name: v} for name, values in axes.items() for v in values[1:]]
    host = None
    for point in checks:
        threshold = parts.write_threshold
        if point["write_policy"] == WRITE_BACK and through:
            threshold = None  # the threshold is the write-through cells'
        host = build_host(host_tokens=point["host_tokens"],
                          hicache_ratio=point["hicache_ratio"],
                          write_policy=point["write_policy"], write_threshold=threshold,
                          host_policy=point["host_policy"],
                          host_config=_config_text(configs.get(point["host_policy"])))
        if host is None:  # no host tier, and no host option given: nothing more to check
            return
        check_host_fits(host, [p for p in parts.pool_tokens or [] if p])
    if parts.timing and any(t != 0 for t in parts.host_tokens or [1]):
        for spec in parts.cost_models or [DEFAULT_COST_MODEL]:
            try:
                model = load_cost_model(spec)
            except CostModelError:
                continue  # check_timing names it
            check_transfer(host, model)
