"""How vLLM 0.33.0's CPU offload tier reads its size, ``cpu_bytes_to_use``: stated once.

``CPUOffloadingSpec.__init__`` (``vllm/v1/kv_offload/cpu/spec.py``) first refuses a
value that is not truthy (missing, ``0``, ``""``, ``null``) with its own words, then sizes
the tier as ``int(cpu_bytes_to_use)`` floor-divided by the bytes of one chunk. So a
value ``int()`` refuses fails the launch with ``int``'s exception (``"lots"``:
``ValueError``; ``1e400``, which JSON reads as infinity: ``OverflowError``; a list:
``TypeError``), and a negative one builds a tier of a negative number of chunks.
:func:`tier_size_problem` runs the same conversion (Python's ``int``, as vLLM does), so
``radix-evict vllm check`` and ``lint`` refuse what vLLM refuses, without vLLM's code and
before any memory is sized. No vLLM import.
"""

from __future__ import annotations

from typing import Any

SIZE_KEY = "cpu_bytes_to_use"
MISSING = f"{SIZE_KEY} must be specified in kv_connector_extra_config"  # vLLM's words
SHOWN = 40  # characters of a refused value quoted in a message


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def tier_size_problem(value: Any) -> str | None:
    """What goes wrong when vLLM sizes its CPU tier from ``value`` (None: nothing)."""
    if not value:
        return MISSING
    try:
        size = int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        return (f"vLLM fails at startup sizing the CPU tier: int({SIZE_KEY}) of "
                f"{_shown(value)} raises {type(exc).__name__}: {exc}")
    if size < 0:
        return (f"{SIZE_KEY} {_shown(value)} is negative: vLLM sizes the CPU tier as "
                f"{size} // the bytes of a chunk, a tier of a negative number of chunks; "
                "give the tier's size in bytes")
    return None
