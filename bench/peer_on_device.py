"""The peer harness with every pool on a device: SGLang's trees and radix-evict on one GPU.

    (cd ../shared/peer && PY bench/peer_on_device.py --device cuda [sglang_bench.py's options])

``bench_vs_sglang.py --device cuda`` runs this in place of ``sglang_bench.py``.
It imports the harness unchanged and swaps its slot allocator for one that
keeps the free list as SGLang 0.5.23's token and paged allocators keep theirs
(``mem_cache/allocator.py``: a torch tensor of free page ids on the device;
``alloc`` takes its head, ``free`` concatenates pages back), so SGLang's trees
hold and return device tensors exactly as in a server. radix-evict's pool is
built on the same device (its bookkeeping stays on the host by design). The
workloads, the operation order, ``--check-equal`` and the output are the
harness's own; with ``--device cpu`` this is the harness with the
device-style allocator on cpu, which is how it is tested without a GPU.
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path
from typing import Any

import torch


class DeviceFreeList:
    """Slots in pages on ``device``; the free page ids a device tensor, as SGLang keeps them."""

    def __init__(self, size: int, page_size: int, device: torch.device) -> None:
        if size % page_size:
            raise ValueError(f"pool size {size} is not a multiple of page size {page_size}")
        self.size = size
        self.page_size = page_size
        self.device = device
        self.free_pages = torch.arange(size // page_size, dtype=torch.int64, device=device)
        self._offsets = torch.arange(page_size, dtype=torch.int64, device=device)

    def available_size(self) -> int:
        return len(self.free_pages) * self.page_size

    def alloc(self, n: int) -> torch.Tensor | None:
        P = self.page_size
        if n % P:
            raise ValueError(f"alloc({n}) is not page-aligned (page size {P})")
        k = n // P
        if k > len(self.free_pages):
            return None
        pages, self.free_pages = self.free_pages[:k], self.free_pages[k:]
        return pages if P == 1 else (pages[:, None] * P + self._offsets).reshape(-1)

    def free(self, idx: torch.Tensor) -> None:
        if idx.numel() == 0:
            return
        pages = idx if self.page_size == 1 else idx[:: self.page_size] // self.page_size
        self.free_pages = torch.cat([self.free_pages, pages.to(self.device)])

    def free_segment(self, idx: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(idx)

    def free_full_segment(self, idx: torch.Tensor, *, start_pos: int = 0) -> None:
        self.free(idx)

    def free_full(self, idx: torch.Tensor) -> None:
        self.free(idx)

    def mamba_full_cache_donor(self) -> None:  # UnifiedRadixCache.evict_for_alloc asks
        return None


def on_device(harness: Any, device: torch.device) -> None:
    """Point the harness's allocator and radix-evict's pool at ``device``."""
    harness.SlotAllocator = lambda size, page_size=1: DeviceFreeList(size, page_size, device)
    load = harness.load_radix_evict

    def load_on_device() -> tuple[Any, Any]:
        module, info = load()
        if module is None:
            return module, info
        proxy = types.SimpleNamespace(**{k: getattr(module, k) for k in dir(module)})

        def kv_pool(*args: Any, **kw: Any) -> Any:
            kw["device"] = device
            return module.KVPool(*args, **kw)

        proxy.KVPool = kv_pool
        if info is not None:
            info["device"] = str(device)
        return proxy, info

    harness.load_radix_evict = load_on_device


def main() -> None:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--peer", default=str(Path.cwd()), help="the harness's folder (default: .)")
    a, rest = ap.parse_known_args()
    from radix_evict.cache.device import resolve_device

    device = resolve_device(a.device, "--device")
    sys.path.insert(0, a.peer)
    import sglang_bench  # the harness, unchanged

    on_device(sglang_bench, device)
    print(f"# pools on {device}: SGLang's free list a {device} tensor; radix-evict's KVPool there")
    sys.argv = ["sglang_bench.py", *rest]
    sglang_bench.main()


if __name__ == "__main__":
    main()
