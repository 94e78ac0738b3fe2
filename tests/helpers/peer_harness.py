"""The side-by-side harness in ../shared/peer, loaded for cross-checks (skipped when absent)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
HARNESS = SHARED / "peer" / "sglang_bench.py"
HARNESS_TLRU = {"threshold": 1024, "next_prompt_estimate": 128}


def load_harness() -> ModuleType:
    """``sglang_bench`` as a module; the test skips when ../shared is not there."""
    if not HARNESS.exists():
        pytest.skip(f"side-by-side harness not found at {HARNESS}")
    name = "sglang_bench_for_tests"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HARNESS)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    # the harness turns logging off process-wide (logging.disable(WARNING)) at import: a test
    # that reads a library's log lines later in the same session would see none
    was = logging.root.manager.disable
    try:
        spec.loader.exec_module(mod)
    finally:
        logging.disable(was)
    return mod


def harness_args(**over: Any) -> argparse.Namespace:
    """The harness's default command-line values (sglang_bench.main), with overrides."""
    a: dict[str, Any] = dict(
        seed=0, convs=2000, max_turns=8, num_sys=16, sys_min=300, sys_max=2000, zipf=1.1,
        user_median=120.0, out_median=200.0, conv_rate=2.0, think_mean=30.0, vocab=50000,
        prefill_rate=20000.0, decode_rate=100.0, page_size=1, pool_tokens=200_000,
        re_keys="numpy", no_split_prompt=False, block_size=512, trace_limit=0,
        tlru_config=json.dumps(HARNESS_TLRU), slru_config=None,
    )
    a.update(over)
    return argparse.Namespace(**a)
