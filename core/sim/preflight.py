"""What a replay needs, checked before it starts: pool and page sizes, memory, the device.

A replay of a built-in workload takes seconds and a trace's minutes (a sweep,
hours); a pool smaller than one page or larger than the machine's memory, or
a device this machine does not have, must fail before that, with an
:class:`~radix_evict.errors.OptionError` naming the option, not after it with a
traceback. ``simulate`` and ``sweep`` call these same checks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from radix_evict.cache.device import DeviceError, resolve_device
from radix_evict.errors import OptionError
from radix_evict.sim.workloads import Workload
from radix_evict.sim.workloads.select import WorkloadParam

__all__ = ["GIB", "POOL_BYTES_PER_TOKEN", "check_fits", "check_params", "check_pool",
           "check_workload_pools", "device_option", "physical_memory"]

# What a replay's pool costs per token (the slot free list and per-slot
# bookkeeping; measured: ~24 bytes a token for KVPool(layers=0)).
POOL_BYTES_PER_TOKEN = 24
GIB = 1024**3


def device_option(value: str, option: str = "--device") -> str:
    """``--device`` resolved by the one device rule (``cuda`` -> ``cuda:0``), as a name.

    A device this machine does not have (cuda without a GPU, a GPU index past
    the last) is an OptionError naming the option, before any replay.
    """
    try:
        return str(resolve_device(value, option))
    except DeviceError as exc:
        raise OptionError(str(exc)) from exc


def physical_memory() -> int | None:
    """Bytes of RAM on this machine (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_pool(pool_tokens: int | None, page_size: int, *, memory: int | None = None) -> None:
    """An explicit ``--pool-tokens`` must hold a page and fit in memory (before any workload)."""
    if pool_tokens is None:
        return
    if pool_tokens < page_size:
        raise OptionError(f"--pool-tokens {pool_tokens:,} holds no whole page of --page-size "
                          f"{page_size:,} tokens: give a pool of at least one page")
    check_fits(f"--pool-tokens {pool_tokens:,}", "a pool that size", pool_tokens,
               POOL_BYTES_PER_TOKEN, memory=memory)


def check_fits(option: str, what: str, tokens: float, bytes_per_token: int, *,
               memory: int | None = None) -> None:
    """The one memory rule for a size the user gives (a pool, a host tier): ``tokens`` at
    ``bytes_per_token`` must fit in this machine's memory, checked before anything is
    allocated. ``tokens`` may be a float (a ratio's product), infinite included."""
    ram = physical_memory() if memory is None else memory
    need = tokens * bytes_per_token
    if ram is not None and not need <= ram:
        size = f"about {need / GIB:,.1f}" if need < 1e15 * GIB else "over 1e15"
        raise OptionError(f"{option}: {what} needs {size} GiB ({bytes_per_token} bytes a "
                          f"token), more than this machine's {ram / GIB:,.1f} GiB")


def check_workload_pools(workloads: Iterable[Workload], pool_tokens: int | None,
                         page_size: int) -> None:
    """Without ``--pool-tokens`` each workload's default pool must hold a page (before replay)."""
    if pool_tokens is not None:
        return
    for wl in workloads:
        if wl.default_pool_tokens < page_size:
            raise OptionError(f"--page-size {page_size:,}: {wl.name}'s default pool of "
                              f"{wl.default_pool_tokens:,} tokens holds no whole page; give a "
                              "smaller --page-size or a --pool-tokens of at least one page")


def check_params(params: Sequence[WorkloadParam]) -> None:
    """``--param seed=N`` would collide with ``--seed``: say which option to use."""
    for p in params:
        if p.key == "seed":
            scope = f"{p.workload}." if p.workload else ""
            raise OptionError(f"--param {scope}seed={p.value}: the workload seed is not a "
                              f"parameter; use --seed {p.value}")
