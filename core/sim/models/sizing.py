"""A KV memory budget in bytes, split between a model's components as SGLang splits it.

- Sliding window: SGLang sizes the full pool so that full tokens times
  (full bytes per token + ``swa_full_tokens_ratio`` x window bytes per token)
  fills the budget, and gives the window pool ``ratio`` x the full tokens
  (``model_executor/pool_configurator.py:797-802, 880-881``); the ratio's
  default is 0.8 (``arg_groups/fields/schedule.py:150-162``).
- Recurrent state: ``mamba_full_memory_ratio`` r gives the states r / (1 + r) of
  the budget and full attention the rest (``mem_cache/kv_cache_configurator.py:
  3352-3356``); the default is 0.9 (``arg_groups/fields/schedule.py:220-227``).

Both pools are cut to whole pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from radix_evict.cache.hybrid.layout import HybridLayout

SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}  # fmt: skip


@dataclass(frozen=True)
class PoolSizes:
    full_tokens: int
    swa_tokens: int = 0
    mamba_states: int = 0


def parse_bytes(text: str) -> int:
    """``40GiB``, ``512MiB``, ``1.5GB`` or a plain number of bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in _UNITS:
        raise ValueError(f"not a memory size: {text!r} (say 40GiB, 512MiB, 2GB or bytes)")
    return int(float(m.group(1)) * _UNITS[unit])


def pool_sizes(
    layout: HybridLayout,
    kv_bytes: int,
    page_size: int = 1,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
) -> PoolSizes:
    """The pools ``kv_bytes`` of KV memory buys for ``layout``."""
    if kv_bytes <= 0:
        raise ValueError(f"kv memory must be positive, got {kv_bytes} bytes")
    if not 0 < swa_full_tokens_ratio <= 1:
        raise ValueError(f"swa_full_tokens_ratio must be in (0, 1], got {swa_full_tokens_ratio}")
    if mamba_full_memory_ratio <= 0:
        raise ValueError(f"mamba_full_memory_ratio must be > 0, got {mamba_full_memory_ratio}")

    def pages(n: float) -> int:
        return int(n) // page_size * page_size

    full_bpt = layout.bytes_per_token("full")
    if layout.kind == "swa":
        cell = full_bpt + swa_full_tokens_ratio * layout.bytes_per_token("swa")
        full = pages(kv_bytes / cell)
        return PoolSizes(full, pages(full * swa_full_tokens_ratio))
    if layout.kind == "mamba":
        r = mamba_full_memory_ratio
        states = int(kv_bytes * r / (1 + r) // layout.bytes_per_state)
        return PoolSizes(pages(kv_bytes / (1 + r) / full_bpt), mamba_states=states)
    return PoolSizes(pages(kv_bytes / full_bpt))
