"""A host-tier grid's axes: the host tier's size, its write policy and its host policy.

A grid with a host tier (``Grid.host``, :class:`HostAxes`: SGLang's HiCache,
:mod:`radix_evict.cache.host_tier`) adds three more axes: the host tier's
size (tokens, or SGLang's ``--hicache-ratio``), the write policy and the host
policy, expanded after the timing point and before the policy. Each cell
carries its :class:`HostPoint` and its key gains a ``host`` entry; a host
size of 0 (or less than a page) is no host tier, and that cell's key is the
one-tier cell's, as it always was. The references (oracle, ceiling) stay
one-tier, one per pool size: the ceiling is also the two-tier bound (Belady
on the device with an unbounded host tier serves every prefix seen before,
docs/hicache.md §12), whatever the host size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
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
    "DEVICE_POLICY", "HostAxes", "HostPoint", "host_label", "host_line", "write_threshold_of",
]

DEVICE_POLICY = "device"  # a host policy axis value: the device policy ranks host leaves


def write_threshold_of(write_policy: str, write_threshold: int | None) -> int:
    """The insert count that backs a node up: ``write_threshold`` or the write policy's own.

    0 for ``write_back`` (it writes on device eviction, never on insert).
    """
    if write_policy == WRITE_BACK:
        return 0
    return write_threshold if write_threshold is not None else WRITE_THRESHOLDS[write_policy]


@dataclass(frozen=True, eq=False)
class HostPoint:
    """One cell's host tier: its size, write policy and host policy (SGLang's HiCache).

    ``tokens`` (whole pages of the cell's page size, above 0) or ``ratio``
    (SGLang's ``--hicache-ratio``: sized from the cell's pool) gives the size;
    ``write_threshold`` None is the write policy's own; ``policy`` None is the
    device policy (SGLang's way), else a registered policy with its validated
    ``policy_config`` (None: its defaults). Two points are equal when their
    :meth:`key` is: a threshold given equal to the write policy's own is the
    same point.
    """

    tokens: int | None = None
    ratio: float | None = None
    write_policy: str = DEFAULT_WRITE_POLICY
    write_threshold: int | None = None
    policy: str | None = None
    policy_config: PolicyConfig | None = None

    @property
    def threshold(self) -> int:
        """The insert count that backs a node up (0: write_back, on device eviction)."""
        return write_threshold_of(self.write_policy, self.write_threshold)

    @property
    def config_dict(self) -> dict[str, Any] | None:
        """The host policy's config as JSON types (None: none given)."""
        return None if self.policy_config is None else config_dict(self.policy_config)

    def key(self) -> dict[str, Any]:
        """The ``host`` entry of a cell's key (JSON types, numbers spelled one way)."""
        return {"tokens": self.tokens, "ratio": _num(self.ratio),
                "write_policy": self.write_policy, "write_threshold": self.threshold,
                "policy": self.policy, "config": self.config_dict}

    @cached_property
    def key_json(self) -> str:
        """:meth:`key` as canonical JSON: the point's identity (computed once)."""
        return canonical_json(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostPoint) and other.key_json == self.key_json

    def __hash__(self) -> int:
        return hash(self.key_json)

    def spec(self) -> HostTierSpec:
        """The HostTierSpec a cell replays with; ValueError (its own checks) for bad values."""
        return HostTierSpec(tokens=self.tokens, ratio=self.ratio, write_policy=self.write_policy,
                            write_threshold=self.write_threshold, policy=self.policy,
                            policy_config=self.policy_config)

    def at_page(self, page_size: int) -> HostPoint | None:
        """The point a cell of ``page_size`` gets: tokens in whole pages; None under a page."""
        if self.tokens is None or page_size < 1:
            return self
        tokens = self.tokens // page_size * page_size
        if tokens <= 0:
            return None
        return self if tokens == self.tokens else replace(self, tokens=tokens)

    @property
    def label(self) -> str:
        """``host 1,000,000 tokens, write_back``: how messages and tables name the point."""
        cfg = self.config_dict
        return host_label(self.tokens, self.ratio, self.write_policy, self.threshold,
                          self.policy, None if cfg is None else canonical_json(cfg))


def host_line(write_policy: str, threshold: int | None, policy: str | None,
              config_json: str | None = None) -> str:
    """A host point without its size: ``write_back``, ``write_through, host policy lfu``.

    The threshold is named where it is not the write policy's own.
    """
    parts = [write_policy]
    if threshold is not None and threshold != write_threshold_of(write_policy, None):
        parts.append(f"threshold {threshold}")
    if policy is not None:
        cfg = "" if config_json in (None, "null") else f" {config_json}"
        parts.append(f"host policy {policy}{cfg}")
    return ", ".join(parts)


def host_label(tokens: int | None, ratio: float | None, write_policy: str,
               threshold: int | None, policy: str | None, config_json: str | None = None
               ) -> str:
    """How messages and tables name a host point: its size, then :func:`host_line`."""
    size = f"hicache ratio {ratio:g}" if ratio is not None else f"host {tokens or 0:,} tokens"
    return f"{size}, {host_line(write_policy, threshold, policy, config_json)}"


@dataclass(frozen=True)
class HostAxes:
    """The host-tier axes of a grid: sizes (tokens or ratios), write policies, host policies.

    A size of 0 tokens is no host tier (:meth:`points` gives None for it).
    ``policies`` pairs each host policy (None: the device policy) with its
    validated config. ``write_threshold`` applies to the write-through
    policies (``write_back`` writes on device eviction). :meth:`points` lists
    size first, then write policy, then host policy.
    """

    tokens: tuple[int, ...] = ()
    ratios: tuple[float, ...] = ()
    write_policies: tuple[str, ...] = (DEFAULT_WRITE_POLICY,)
    policies: tuple[tuple[str | None, PolicyConfig | None], ...] = ((None, None),)
    write_threshold: int | None = None

    def points(self) -> list[HostPoint | None]:
        """Every point in a fixed order, each once; None for no host tier (0 tokens).

        Raises ValueError (``HostTierSpec``'s own checks) for a point the replay refuses.
        """
        sizes: list[tuple[int | None, float | None]] = (
            [(t, None) for t in self.tokens] + [(None, float(r)) for r in self.ratios])
        out: dict[HostPoint | None, None] = {}
        for tokens, ratio in sizes:
            for write in self.write_policies:
                threshold = None if write == WRITE_BACK else self.write_threshold
                for policy, config in self.policies:
                    if tokens == 0:
                        out.setdefault(None)
                        continue
                    point = HostPoint(tokens, ratio, write, threshold, policy, config)
                    point.spec()  # checked before it is hashed (its key reads its threshold)
                    out.setdefault(point)
        return list(out)

    def count(self) -> int:
        """Points before duplicates are dropped (what the axes multiply to)."""
        return ((len(self.tokens) + len(self.ratios)) * len(self.write_policies)
                * len(self.policies))
