"""``simulate --pool-curve SIZES``: its sizes read, and what it cannot go with refused, each
refusal an :class:`~radix_evict.errors.OptionError` saying why (docs/pool-curve.md); the
curve itself is :mod:`radix_evict.sim.pool_curve_runs`'."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from radix_evict.cache.host_tier import HostTierSpec
from radix_evict.errors import OptionError
from radix_evict.sim.pool_curve_runs import CURVE_POLICY
from radix_evict.sim.preflight import POOL_BYTES_PER_TOKEN, check_fits
from radix_evict.sim.sweep.values import SweepValueError, parse_counts
from radix_evict.sim.timed.spec import TimingSpec

__all__ = ["OPTION", "WHY_LRU", "curve_sizes", "refuse_with_curve"]

OPTION = "--pool-curve"
WHY_LRU = ("the inclusion property (a larger pool holds everything a smaller one holds, so "
           "one replay's recency order gives every size) holds for lru only")


def curve_sizes(text: str, page_size: int) -> list[int]:
    """``--pool-curve``'s sizes (the sweep's own parser), each a whole page at least."""
    try:
        sizes = parse_counts(text, OPTION)
    except SweepValueError as exc:
        text = str(exc)
        raise OptionError(text if text.startswith(OPTION) else f"{OPTION}: {text}") from None
    if not sizes:
        raise OptionError(f"{OPTION}: give at least one pool size")
    for s in sizes:
        if s < page_size:
            raise OptionError(f"{OPTION}: a pool of {s:,} tokens holds no whole page of "
                              f"--page-size {page_size:,} tokens")
    check_fits(f"{OPTION} {max(sizes):,}", "a pool that size", max(sizes),
               POOL_BYTES_PER_TOKEN)
    return sizes


def refuse_with_curve(*, policies: Sequence[str], pool_tokens: int | None,
                      timing: TimingSpec | None, host: HostTierSpec | None,
                      model: str | None, metrics: Path | None, workloads: int) -> None:
    """What ``--pool-curve`` cannot go with, each refused saying why."""
    others = [p for p in dict.fromkeys(policies) if p != CURVE_POLICY]
    if others:
        raise OptionError(f"{OPTION} computes lru only, not {', '.join(others)}: {WHY_LRU}; "
                          "for other policies run one replay per size: radix-evict sweep -p "
                          f"{','.join(others)} --pool-tokens SIZES")
    if pool_tokens is not None:
        raise OptionError(f"give {OPTION} (many pool sizes) or --pool-tokens (one), not both")
    if timing is not None:
        raise OptionError(f"{OPTION} is the token replay's curve, not --timing's: in the timed "
                          "replay admission, batching and retraction depend on the pool size, "
                          "so each size needs its own timed replay (radix-evict sweep --timing "
                          "--pool-tokens SIZES)")
    if host is not None:
        raise OptionError(f"{OPTION} has no host tier: HiCache's rules are not "
                          "inclusion-preserving (which pages the host holds depends on what "
                          "the device evicted at each size, and load-backs change device "
                          "occupancy), so each size needs its own replay (radix-evict sweep "
                          "--host-tokens ... --pool-tokens SIZES)")
    if model is not None:
        raise OptionError(f"{OPTION} is a token replay; --model replays one pool through a "
                          "real decoder: give one")
    if metrics is not None:
        raise OptionError(f"--enable-metrics writes one cache's counters; {OPTION} runs no "
                          "cache per size")
    if workloads != 1:
        raise OptionError(f"{OPTION} replays one workload or one trace (no 'all' or 'A,B')")
