"""What ``simulate`` and ``sweep`` check before any replay: pool and page sizes, output files.

A replay of a built-in workload takes seconds and a trace's minutes (a
sweep, hours); a pool smaller than one page, a pool larger than the
machine's memory, or a ``--plot`` into a directory that cannot be written
must fail before that, with a message naming the option, not after it with
a traceback. Both commands call these same checks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from radix_evict.cache.device import DeviceError, resolve_device
from radix_evict.outputs import Input, Ours, OutputFile, contains
from radix_evict.sim.workloads import Workload

from .errors import EXIT_USAGE, CliError
from .options import Param
from .plotting import PLOT_MARKER, PLOT_SUFFIXES, pyplot

# What a replay's pool costs per token (the slot free list and per-slot
# bookkeeping; measured: ~24 bytes a token for KVPool(layers=0)).
POOL_BYTES_PER_TOKEN = 24
GIB = 1024**3


def device_option(value: str, option: str = "--device") -> str:
    """``--device`` resolved by the one device rule (``cuda`` -> ``cuda:0``), as a name.

    A device this machine does not have (cuda without a GPU, a GPU index past
    the last) is a usage error naming the option, before any replay.
    """
    try:
        return str(resolve_device(value, option))
    except DeviceError as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc


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
        raise CliError(f"--pool-tokens {pool_tokens:,} holds no whole page of --page-size "
                       f"{page_size:,} tokens: give a pool of at least one page", EXIT_USAGE)
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
        raise CliError(f"{option}: {what} needs {size} GiB ({bytes_per_token} bytes a "
                       f"token), more than this machine's {ram / GIB:,.1f} GiB", EXIT_USAGE)


def check_workload_pools(workloads: Iterable[Workload], pool_tokens: int | None,
                         page_size: int) -> None:
    """Without ``--pool-tokens`` each workload's default pool must hold a page (before replay)."""
    if pool_tokens is not None:
        return
    for wl in workloads:
        if wl.default_pool_tokens < page_size:
            raise CliError(f"--page-size {page_size:,}: {wl.name}'s default pool of "
                           f"{wl.default_pool_tokens:,} tokens holds no whole page; give a "
                           "smaller --page-size or a --pool-tokens of at least one page",
                           EXIT_USAGE)


def check_params(params: Sequence[Param]) -> None:
    """``--param seed=N`` would collide with ``--seed``: say which option to use."""
    for p in params:
        if p.key == "seed":
            scope = f"{p.workload}." if p.workload else ""
            raise CliError(f"--param {scope}seed={p.value}: the workload seed is not a "
                           f"parameter; use --seed {p.value}", EXIT_USAGE)


def check_output(path: Path | None, option: str, what: str, ours: Ours | None = None, *,
                 force: bool = False, inputs: Iterable[Input] = (),
                 suffixes: Sequence[str] = ()) -> OutputFile | None:
    """Fail before minutes of replay, not after, when an output may not be written.

    The rule is radix_evict.outputs' (never an input of the run, never another's
    file without --force, written atomically); here the name's suffix too.
    Returns the output to write once the run is done (None: not asked for).
    """
    if path is None:
        return None
    if suffixes and path.suffix.lower() not in suffixes:
        raise CliError(f"{option} {path}: use a file name ending in {', '.join(suffixes)}",
                       EXIT_USAGE)
    out = OutputFile(option, path, what, ours, force, tuple(inputs))
    out.check()
    return out


def check_plot(path: Path | None, *, force: bool = False,
               inputs: Iterable[Input] = ()) -> OutputFile | None:
    """``--plot``: a name we can draw, a file we may write, and matplotlib installed."""
    if path is None:
        return None
    out = check_output(path, "--plot", "plot", contains(PLOT_MARKER.encode()), force=force,
                       inputs=inputs, suffixes=PLOT_SUFFIXES)
    pyplot()  # matplotlib missing: say so now, not after the replays
    return out
