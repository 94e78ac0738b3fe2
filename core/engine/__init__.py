"""A tiny decoder with real K/V in the pool, for measured TTFT per eviction policy.

``run_engine_replay(requests, policy, ...)`` replays requests through the radix
cache and the model; ``use_cache=False`` is the baseline that recomputes every
prompt. ``tiny_chat_requests()`` is the built-in CPU-sized workload.
"""

from __future__ import annotations

from radix_evict.engine.loop import Engine, EngineRequest, build_engine, run_engine_replay
from radix_evict.engine.model import MODEL_PRESETS, KVBuffers, TinyConfig, TinyDecoder
from radix_evict.engine.result import EngineResult
from radix_evict.engine.workload import requests_from_workload, tiny_chat_requests

__all__ = [
    "MODEL_PRESETS",
    "Engine",
    "EngineRequest",
    "EngineResult",
    "KVBuffers",
    "TinyConfig",
    "TinyDecoder",
    "build_engine",
    "requests_from_workload",
    "run_engine_replay",
    "tiny_chat_requests",
]
