"""``cpu_bytes_to_use``: ``vllm check`` and ``lint`` refuse exactly the sizes vLLM 0.33.0 does.

vLLM's real ``CPUOffloadingSpec`` is built with a nonzero chunk size, so its own
``int(cpu_bytes_to_use) // chunk_bytes`` runs; radix-evict's statement of that conversion
(:func:`radix_evict.vllm.tier.tier_size_problem`) must agree on every value.
"""

from __future__ import annotations

import importlib
import json
import math
import mmap
import types
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict.lint import lint_text
from radix_evict.vllm.launch import offloading_config
from radix_evict.vllm.tier import tier_size_problem

REFUSED: list[Any] = ["lots", math.inf, math.nan, [1], {"a": 1}, -5, "-5", "1e9", 0, "",
                      None, "9" * 5000]
TAKEN: list[Any] = [1 << 30, 1.5, True, "1_000", " 12 ", -0.5]
OURS = {"eviction_policy": "radix_evict_lru", "cache_policy_module_path": "radix_evict.vllm"}


def vllm_refuses(vllm: types.ModuleType, value: Any) -> bool:
    """vLLM's own spec, sizing a real tier: does it raise, or size a negative tier?"""
    spec_cls = importlib.import_module("vllm.v1.kv_offload.cpu.spec").CPUOffloadingSpec
    extra = {} if value is None else {"cpu_bytes_to_use": value}
    try:
        spec = spec_cls(offloading_config(extra, worker_kv_bytes_per_block=mmap.PAGESIZE))
    except Exception:
        return True
    return bool(spec.num_chunks < 0)


@pytest.mark.parametrize(("value", "refused"),
                         [(v, True) for v in REFUSED] + [(v, False) for v in TAKEN],
                         ids=lambda v: repr(v)[:20])
def test_the_conversion_agrees_with_vllms_own(vllm: types.ModuleType, value: Any,
                                              refused: bool) -> None:
    assert vllm_refuses(vllm, value) == refused
    assert (tier_size_problem(value) is not None) == refused


def kv_config(size: Any) -> str:
    return json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                       "kv_connector_extra_config": {"cpu_bytes_to_use": size, **OURS}})


BAD = [('"lots"', "raises ValueError: invalid literal for int()"),
       ("1e400", "raises OverflowError: cannot convert float infinity to integer"),
       ("-5", "cpu_bytes_to_use -5 is negative")]


@pytest.mark.parametrize(("size", "said"), BAD)
def test_vllm_check_refuses_a_size_vllm_refuses(vllm: types.ModuleType, size: str,
                                               said: str) -> None:
    text = kv_config(0).replace('"cpu_bytes_to_use": 0', f'"cpu_bytes_to_use": {size}')
    r = run_cli("vllm", "check", "--kv-transfer-config", text, "--json")
    assert r.exit_code == 1, r.output
    assert said in json.loads(r.stdout)["error"]


@pytest.mark.parametrize(("size", "said"), BAD)
def test_lint_refuses_it_at_the_value(size: str, said: str) -> None:
    text = kv_config(0).replace('"cpu_bytes_to_use": 0', f'"cpu_bytes_to_use": {size}')
    report = lint_text(f"vllm serve m --kv-transfer-config '{text}'\n", "serve.sh")
    (p,) = [p for p in report.problems if p.type == "cpu_bytes_invalid"]
    assert report.outcome == "invalid" and said in p.msg
    assert p.loc.endswith("kv_connector_extra_config.cpu_bytes_to_use")
    assert p.column == text.index(size) + len("vllm serve m --kv-transfer-config '") + 1


def test_a_good_size_still_passes() -> None:
    report = lint_text(f"vllm serve m --kv-transfer-config '{kv_config(1 << 30)}'\n",
                       "serve.sh")
    assert report.outcome == "ok", report.problems
