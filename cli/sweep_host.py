"""``sweep``'s host tier (SGLang's HiCache): its axes and options, checked as ``simulate``'s.

``--host-tokens`` (or ``--hicache-ratio``), ``--write-policy`` and
``--host-policy`` take lists (grid axes); ``--write-threshold`` one value
for every cell (the write-through cells': ``write_back`` writes on device
eviction) and ``--host-config`` a host policy's config, ``NAME=JSON`` or,
for the one ``--host-policy``, plain JSON or ``@FILE``. Every value goes
through ``simulate``'s own checker (:func:`~radix_evict.cli.simulate_host.build_host`),
so a value ``simulate`` refuses is refused here with the same message and
exit code; the grid (core's ``make_grid``) then builds the cells.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from radix_evict.cache.host_tier import WRITE_BACK
from radix_evict.sim.sweep import GridParts, SweepValueError
from radix_evict.sim.sweep.grid import DEVICE_POLICY
from radix_evict.sim.sweep.values import parse_numbers, split_top_level
from radix_evict.sim.timed.cost import DEFAULT_COST_MODEL, CostModelError, load_cost_model

from .errors import EXIT_USAGE, CliError
from .options import read_config_arg, split_named_config
from .simulate_host import (
    HICACHE_RATIO_HELP,
    HOST_CONFIG_HELP,
    HOST_POLICY_HELP,
    HOST_TOKENS_HELP,
    WRITE_POLICY_HELP,
    WRITE_THRESHOLD_HELP,
    build_host,
    check_host_fits,
    check_transfer,
)
from .sweep_grid import count_values

HostTokensOpt = Annotated[list[str] | None, typer.Option(
    "--host-tokens",
    help=f"{HOST_TOKENS_HELP} A grid axis: N1,N2,... with K/M/G or a range 1M..8M*2; a 0 "
         "cell is the one-tier cell (its key unchanged).")]
HicacheRatioOpt = Annotated[list[str] | None, typer.Option(
    "--hicache-ratio",
    help=f"{HICACHE_RATIO_HELP} A grid axis: R1,R2,... (instead of --host-tokens).")]
WritePolicyOpt = Annotated[list[str] | None, typer.Option(
    "--write-policy", help=f"{WRITE_POLICY_HELP} A grid axis: W1,W2,...")]
HostPolicyOpt = Annotated[list[str] | None, typer.Option(
    "--host-policy",
    help=f"{HOST_POLICY_HELP} A grid axis: P1,P2,...; '{DEVICE_POLICY}' is the default.")]
WriteThresholdOpt = Annotated[int | None, typer.Option(
    "--write-threshold", min=1,
    help=f"{WRITE_THRESHOLD_HELP} One value, for the write-through cells (write_back writes "
         "on device eviction).")]
HostConfigOpt = Annotated[list[str] | None, typer.Option(
    "--host-config",
    help=f"{HOST_CONFIG_HELP} Repeatable: NAME=JSON for host policy NAME; plain JSON or @FILE "
         "for the one --host-policy.")]


def _names(values: Sequence[str]) -> list[str] | None:
    names = [n for v in values for n in split_top_level(v) if n]
    return names or None


def _ratios(values: Sequence[str]) -> list[float] | None:
    if not values:
        return None
    try:
        return [float(n) for v in values for n in parse_numbers(v, "--hicache-ratio")]
    except SweepValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _configs(values: Sequence[str], policies: list[str] | None) -> dict[str, Any] | None:
    """``--host-config`` values -> {host policy: its config text}; a plain one needs one policy."""
    out: dict[str, Any] = {}
    for raw in values:
        name, text = split_named_config(raw)
        if name is None:
            if policies is not None and len(policies) > 1:
                raise CliError("a plain --host-config goes with one --host-policy; with several, "
                               "write --host-config NAME=JSON", EXIT_USAGE)
            name = policies[0] if policies else DEVICE_POLICY  # none: simulate's refusal
        if name in out:
            raise CliError(f"--host-config {name}=... given twice", EXIT_USAGE)
        out[name] = read_config_arg(text, "--host-config")
    return out or None


def host_options(
    *,
    host_tokens: Sequence[str],
    hicache_ratio: Sequence[str],
    write_policy: Sequence[str],
    host_policy: Sequence[str],
    write_threshold: int | None,
    host_config: Sequence[str],
) -> dict[str, Any]:
    """The host tier's GridParts fields the command line gives (None where it gives none)."""
    policies = _names(host_policy)
    return {
        "host_tokens": count_values(host_tokens, "--host-tokens"),
        "hicache_ratios": _ratios(hicache_ratio),
        "write_policies": _names(write_policy),
        "host_policies": [None if p == DEVICE_POLICY else p for p in policies] if policies
        else None,
        "write_threshold": write_threshold,
        "host_configs": _configs(host_config, policies),
    }


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
