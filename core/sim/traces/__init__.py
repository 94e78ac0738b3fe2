"""Trace files in the formats people have (Mooncake, Bailian/Qwen, ServeGen, plug-ins)."""

from __future__ import annotations

from radix_evict.sim.traces.block_trace import BlockRow, BlockTrace
from radix_evict.sim.traces.formats import (
    GROUP,
    TraceFormat,
    TraceFormatError,
    detect_format,
    open_trace,
    trace_formats,
)

__all__ = [
    "GROUP",
    "BlockRow",
    "BlockTrace",
    "TraceFormat",
    "TraceFormatError",
    "detect_format",
    "open_trace",
    "trace_formats",
]
