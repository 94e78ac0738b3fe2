"""The host tier a replay gets (SGLang's HiCache): one rule for ``simulate`` and ``sweep``.

:func:`build_host` turns the host-tier options (``--host-tokens`` or
``--hicache-ratio``, ``--write-policy``, ``--write-threshold``,
``--host-policy``, ``--host-config``, ``--admission``) into the one
:class:`~radix_evict.cache.host_tier.HostTierSpec` both commands replay with;
each problem is an :class:`~radix_evict.errors.OptionError` naming its option.
:func:`check_host_grid` runs the same checks on every value of a sweep's host
axes (a sweep grid's host points are HostTierSpecs too,
:mod:`radix_evict.sim.sweep.host_axes`). :func:`tier_at` says what a replay of
a page size does with a spec: a host tier that holds no whole page
(``--host-tokens 0``) is no host tier, the one-tier replay, and a size in
tokens counts whole pages. A ratio always holds a page.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from radix_evict.cache.admission import ADMISSION_POLICIES
from radix_evict.cache.host_tier import WRITE_BACK, WRITE_POLICIES, HostTierSpec
from radix_evict.errors import OptionError, PolicyConfigError, problem_lines
from radix_evict.inputs import read_config_arg
from radix_evict.policies.registry import registry
from radix_evict.sim.preflight import check_fits
from radix_evict.sim.timed.cost import (
    DEFAULT_COST_MODEL,
    CostModel,
    CostModelError,
    load_cost_model,
)

if TYPE_CHECKING:
    from radix_evict.sim.results import HostFigures
    from radix_evict.sim.sweep.spec import GridParts

__all__ = ["HOST_BYTES_PER_TOKEN", "add_pcie_bytes", "build_host", "check_host_fits",
           "check_host_grid", "check_transfer", "tier_at"]

H = TypeVar("H", bound=HostTierSpec)

# What a host tier costs per token (its KVPool(layers=0) and the host ledgers; measured:
# about 27 bytes a token), for the memory rule --pool-tokens is checked by.
HOST_BYTES_PER_TOKEN = 27


def tier_at(host: H | None, page_size: int) -> H | None:
    """``host`` for a replay of ``page_size``: None where it holds no whole page, else its
    tokens rounded down to whole pages (the same spec where they already are)."""
    if host is None or host.tokens is None or page_size < 1:
        return host
    tokens = host.tokens // page_size * page_size
    if tokens <= 0:
        return None
    return host if tokens == host.tokens else replace(host, tokens=tokens)


def add_pcie_bytes(figures: HostFigures | None, model: CostModel | None) -> None:
    """Set ``figures``' PCIe bytes: its tokens at ``model``'s KV size (None: the default's).

    A token replay has no model of its own; the bytes are then the default cost
    model's (named in ``pcie_cost_model``), what the timed replay would charge.
    """
    if figures is None:
        return
    if model is None:
        model = load_cost_model(DEFAULT_COST_MODEL)
    if model.transfer is None:
        return
    figures.pcie_cost_model = model.name
    figures.pcie_bytes = figures.pcie_tokens * model.transfer.kv_bytes_per_token


def build_host(*, host_tokens: int | None, hicache_ratio: float | None,
               write_policy: str | None, write_threshold: int | None,
               host_policy: str | None, host_config: str | None,
               admission: str | None = None) -> HostTierSpec | None:
    """The HostTierSpec the options ask for (None: no host tier); errors name the option.

    ``host_config`` is JSON text or ``@FILE``; the host policy's config is
    validated by the registry, strictly.
    """
    if host_tokens is not None and hicache_ratio is not None:
        raise OptionError("give --host-tokens or --hicache-ratio, not both (SGLang: "
                          "--hicache-size overrides the ratio; here one size is one option)")
    if host_tokens is None and hicache_ratio is None:
        given = [name for name, v in (("--write-policy", write_policy),
                                      ("--write-threshold", write_threshold),
                                      ("--host-policy", host_policy),
                                      ("--host-config", host_config),
                                      ("--admission", admission)) if v is not None]
        if given:
            raise OptionError(f"{', '.join(given)}: host-tier options; add --host-tokens N or "
                              "--hicache-ratio R")
        return None
    if hicache_ratio is not None and not (math.isfinite(hicache_ratio) and hicache_ratio > 0):
        raise OptionError(f"--hicache-ratio must be above 0 and finite, got {hicache_ratio}")
    policy = write_policy or WRITE_POLICIES[0]
    if policy not in WRITE_POLICIES:
        from radix_evict.suggest import did_you_mean

        near = did_you_mean(policy, list(WRITE_POLICIES))
        raise OptionError(f"--write-policy {policy!r}: use {', '.join(WRITE_POLICIES)}"
                          + (f"; {near}" if near else ""))
    if write_threshold is not None and policy == WRITE_BACK:
        raise OptionError("--write-threshold is for write_through and write_through_selective "
                          "(write_back writes on device eviction)")
    if host_config is not None and host_policy is None:
        raise OptionError("--host-config goes with --host-policy")
    config: Any = None
    if host_policy is not None:
        try:
            registry.check_choice(host_policy)
            if host_config is not None:
                config = registry.parse_config(
                    host_policy, read_config_arg(host_config, "--host-config"))
        except PolicyConfigError as exc:
            lines = ["--host-policy:", *problem_lines(host_policy, exc.problems)]
            raise OptionError("\n".join(lines), invalid=True, problems=exc.problems) from None
    if admission is not None and admission not in ADMISSION_POLICIES:
        from radix_evict.suggest import did_you_mean

        near = did_you_mean(admission, list(ADMISSION_POLICIES))
        raise OptionError(f"--admission {admission!r}: use {', '.join(ADMISSION_POLICIES)}"
                          + (f"; {near}" if near else ""))
    return HostTierSpec(
        tokens=host_tokens, ratio=hicache_ratio, write_policy=policy,
        write_threshold=write_threshold, policy=host_policy, policy_config=config,
        admission=admission,
    )


def check_host_fits(host: HostTierSpec | None, pools: Iterable[int] = (), *,
                    memory: int | None = None) -> None:
    """The host tier must fit in memory, by ``--pool-tokens``' own rule (before any replay):
    ``--host-tokens`` as given, ``--hicache-ratio`` for each device pool in ``pools``."""
    if host is None:
        return
    if host.tokens is not None:
        check_fits(f"--host-tokens {host.tokens:,}", "a host tier that size", host.tokens,
                   HOST_BYTES_PER_TOKEN, memory=memory)
        return
    assert host.ratio is not None
    for pool in pools:
        check_fits(f"--hicache-ratio {host.ratio:g}", f"a host tier of {host.ratio:g} x the "
                   f"{pool:,}-token pool", pool * host.ratio, HOST_BYTES_PER_TOKEN,
                   memory=memory)


def check_transfer(host: HostTierSpec | None, model: CostModel) -> None:
    """A timed replay with a host tier times its copies: the cost model needs [transfer]."""
    if host is not None and model.transfer is None:
        raise OptionError(f"--cost-model {model.name}: no [transfer] table "
                          "(kv_bytes_per_token, host_gbps); a timed replay with a host tier "
                          "needs one to time its copies", invalid=True)


def _config_text(config: Any) -> str | None:
    """A host config as build_host reads it: JSON text (a grid file's mapping dumped)."""
    if config is None or isinstance(config, str):
        return config
    return json.dumps(dict(config) if isinstance(config, Mapping) else config)


def check_host_grid(parts: GridParts) -> None:
    """A sweep's host axes, checked by :func:`build_host` on every value, as ``simulate``
    checks one: a value ``simulate`` refuses is refused here with the same message.

    Each size, write policy and host policy (with its config) is checked once,
    the other axes at their first value; the write threshold with each
    write-through policy (with ``write_back`` only where no write-through
    policy is listed: simulate's refusal). A config for a host policy not
    listed, or a threshold below 1 from a grid file, is refused naming the
    option. A timed sweep's cost models need a [transfer] table.
    """
    from radix_evict.sim.sweep.host_axes import DEVICE_POLICY  # the sweep imports this module

    if parts.write_threshold is not None and parts.write_threshold < 1:
        raise OptionError(f"--write-threshold must be >= 1, got {parts.write_threshold}")
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
        raise OptionError(f"--host-config for {stray[0]}, which is not among the host policies "
                          f"({listed}); add --host-policy {stray[0]}")
    none: list[Any] = [None]
    axes: dict[str, list[Any]] = {"host_tokens": list(parts.host_tokens or none),
                                  "hicache_ratio": list(parts.hicache_ratios or none),
                                  "write_policy": list(parts.write_policies or none),
                                  "host_policy": policies}
    through = [w for w in axes["write_policy"] if w != WRITE_BACK]
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
                continue  # check_timing_grid names it
            check_transfer(host, model)
