"""A host-tier grid's axes: the host tier's size, its write policy and its host policy.

A grid with a host tier (``Grid.host``, :class:`HostAxes`: SGLang's HiCache,
:mod:`radix_evict.cache.host_tier`) adds three more axes: the host tier's
size (tokens, or SGLang's ``--hicache-ratio``), the write policy, the host
policy and the admission policy (:mod:`radix_evict.cache.admission`; None:
every backup is written), expanded after the timing point and before the policy. Each cell
carries its host point: the :class:`~radix_evict.cache.host_tier.HostTierSpec`
it replays with (``simulate``'s type too; :func:`host_point` builds one), and
its key gains a ``host`` entry (:func:`host_key`; its ``admission`` only where
one is given, so that result files written before the axis still resume); a host size of 0 (or less
than a page: :func:`radix_evict.sim.host.tier_at`) is no host tier, and that
cell's key is the one-tier cell's, as it always was. The references (oracle, ceiling) stay
one-tier, one per pool size: the ceiling is also the two-tier bound (Belady
on the device with an unbounded host tier serves every prefix seen before,
docs/hicache.md §12), whatever the host size.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from radix_evict.cache.host_tier import (
    DEFAULT_WRITE_POLICY,
    WRITE_BACK,
    WRITE_THRESHOLDS,
    HostTierSpec,
)
from radix_evict.policies.contract import PolicyConfig
from radix_evict.sim.configs import config_dict
from radix_evict.sim.sweep.keys import canonical_json
from radix_evict.sim.sweep.keys import key_number as _num

__all__ = [
    "DEVICE_POLICY", "HostAxes", "HostPoint", "admission_name", "host_config_dict", "host_key",
    "host_label", "host_line", "host_point", "host_point_text", "host_policy_name",
    "write_threshold_of",
]

DEVICE_POLICY = "device"  # a host policy axis value: the device policy ranks host leaves


def write_threshold_of(write_policy: str, write_threshold: int | None) -> int:
    """The insert count that backs a node up: ``write_threshold`` or the write policy's own.

    0 for ``write_back`` (it writes on device eviction, never on insert).
    """
    if write_policy == WRITE_BACK:
        return 0
    return write_threshold if write_threshold is not None else WRITE_THRESHOLDS[write_policy]


HostPoint = HostTierSpec  # the name grids had for it: a host point is the spec it replays with


def host_point(tokens: int | None, ratio: float | None, write_policy: str,
               write_threshold: int | None, policy: str | None,
               policy_config: PolicyConfig | None, admission: str | None = None
               ) -> HostTierSpec:
    """One cell's host tier (HostTierSpec's own checks: ValueError for bad values).

    ``tokens`` (whole pages of the cell's page size, above 0) or ``ratio``
    (SGLang's ``--hicache-ratio``: sized from the cell's pool) gives the size;
    ``policy`` None is the device policy (SGLang's way), else a registered
    policy with its validated ``policy_config`` (None: its defaults). A
    threshold given equal to the write policy's own is left out: the same
    point, so that two points are equal exactly when their :func:`host_key` is.
    """
    if write_threshold is not None and write_threshold == WRITE_THRESHOLDS.get(write_policy):
        write_threshold = None
    return HostTierSpec(tokens=tokens, ratio=ratio, write_policy=write_policy,
                        write_threshold=write_threshold, policy=policy,
                        policy_config=policy_config, admission=admission)


def host_policy_name(host: HostTierSpec) -> str | None:
    """The host policy's name (None: the device policy)."""
    p = host.policy
    return p if p is None or isinstance(p, str) else p.name


def host_config_dict(host: HostTierSpec) -> dict[str, Any] | None:
    """The host policy's config as JSON types (None: none given)."""
    return None if host.policy_config is None else config_dict(host.policy_config)


def host_key(host: HostTierSpec) -> dict[str, Any]:
    """The ``host`` entry of a cell's key (JSON types, numbers spelled one way); ``admission``
    only where one is given (a key without it is the key every older result file has)."""
    key = {"tokens": host.tokens, "ratio": _num(host.ratio),
           "write_policy": host.write_policy, "write_threshold": host.threshold,
           "policy": host_policy_name(host), "config": host_config_dict(host)}
    admission = admission_name(host)
    if admission is not None:
        key["admission"] = admission
    return key


def admission_name(host: HostTierSpec) -> str | None:
    """The host tier's admission policy's name (None: none, every backup written)."""
    a = host.admission
    return a if a is None or isinstance(a, str) else str(getattr(a, "name", type(a).__name__))


def host_point_text(host: HostTierSpec) -> str:
    """``host 1,000,000 tokens, write_back``: how messages and tables name a cell's host tier."""
    cfg = host_config_dict(host)
    return host_label(host.tokens, host.ratio, host.write_policy, host.threshold,
                      host_policy_name(host), None if cfg is None else canonical_json(cfg),
                      admission_name(host))


def host_line(write_policy: str, threshold: int | None, policy: str | None,
              config_json: str | None = None, admission: str | None = None) -> str:
    """A host point without its size: ``write_back``, ``write_through, host policy lfu``.

    The threshold is named where it is not the write policy's own.
    """
    parts = [write_policy]
    if threshold is not None and threshold != write_threshold_of(write_policy, None):
        parts.append(f"threshold {threshold}")
    if policy is not None:
        cfg = "" if config_json in (None, "null") else f" {config_json}"
        parts.append(f"host policy {policy}{cfg}")
    if admission is not None:
        parts.append(f"admission {admission}")
    return ", ".join(parts)


def host_label(tokens: int | None, ratio: float | None, write_policy: str,
               threshold: int | None, policy: str | None, config_json: str | None = None,
               admission: str | None = None) -> str:
    """How messages and tables name a host point: its size, then :func:`host_line`."""
    size = f"hicache ratio {ratio:g}" if ratio is not None else f"host {tokens or 0:,} tokens"
    return f"{size}, {host_line(write_policy, threshold, policy, config_json, admission)}"


@dataclass(frozen=True)
class HostAxes:
    """The host-tier axes of a grid: sizes, write, host and admission policies.

    A size of 0 tokens is no host tier (:meth:`points` gives None for it).
    ``policies`` pairs each host policy (None: the device policy) with its
    validated config. ``write_threshold`` applies to the write-through
    policies (``write_back`` writes on device eviction). ``admissions``: admission
    policies (None: none). :meth:`points` lists size first, then write policy, then host
    policy, then admission.
    """

    tokens: tuple[int, ...] = ()
    ratios: tuple[float, ...] = ()
    write_policies: tuple[str, ...] = (DEFAULT_WRITE_POLICY,)
    policies: tuple[tuple[str | None, PolicyConfig | None], ...] = ((None, None),)
    write_threshold: int | None = None
    admissions: tuple[str | None, ...] = (None,)

    def points(self) -> list[HostTierSpec | None]:
        """Every point in a fixed order, each once; None for no host tier (0 tokens).

        Raises ValueError (``HostTierSpec``'s own checks) for a point the replay refuses.
        """
        sizes: list[tuple[int | None, float | None]] = (
            [(t, None) for t in self.tokens] + [(None, float(r)) for r in self.ratios])
        out: dict[HostTierSpec | None, None] = {}
        for tokens, ratio in sizes:
            for write in self.write_policies:
                threshold = None if write == WRITE_BACK else self.write_threshold
                for (policy, config), admission in itertools.product(self.policies,
                                                                    self.admissions):
                    if tokens == 0:
                        out.setdefault(None)
                        continue
                    out.setdefault(host_point(tokens, ratio, write, threshold, policy, config,
                                              admission))
        return list(out)

    def count(self) -> int:
        """Points before duplicates are dropped (what the axes multiply to)."""
        return ((len(self.tokens) + len(self.ratios)) * len(self.write_policies)
                * len(self.policies) * len(self.admissions))
