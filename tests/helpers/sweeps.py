"""Shared pieces of the sweep tests: a small grid, and a policy package that fails on request.

The ``flaky`` policy is a real installed distribution (a ``.dist-info`` folder),
so forked workers and Ray workers (given the folder on PYTHONPATH) find it
through its entry point exactly as they would a pip-installed plugin.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from radix_evict import registry
from radix_evict.sim.sweep import GridParts


def write_trace(path: Path, conversations: int = 24, turns: int = 8) -> Path:
    """A small Mooncake trace of growing conversations behind one shared system block.

    Generated (not copied from ../shared): the tests need it wherever they run.
    """
    lines = []
    for turn in range(turns):
        for c in range(conversations):
            blocks = [0] + [1000 * (c + 1) + k for k in range(2 + 2 * turn)]
            lines.append(json.dumps({
                "timestamp": (turn * conversations + c) * 400,
                "input_length": 512 * len(blocks) - 100, "output_length": 150 + 7 * c,
                "hash_ids": blocks}))
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


TRACE = write_trace(Path(tempfile.gettempdir()) / f"radix-evict-sweep-tests-{os.getuid()}"
                    / "conversations.jsonl")

FLAKY_MODULE = '''
import os
from typing import Literal

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig, PolicySpec, hookimpl


class FlakyConfig(PolicyConfig):
    mode: Literal["ok", "raise", "exit"] = Field("ok", description="how score() behaves")


class Flaky(EvictionPolicy):
    name = "flaky"
    Config = FlakyConfig

    def score(self, node):
        if self.config.mode == "raise":
            raise RuntimeError("flaky policy raised on purpose")
        if self.config.mode == "exit":
            os._exit(7)
        return node.last_access_time


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="flaky", policy=Flaky, summary="fails when asked to"))


@hookimpl
def radix_evict_extend_choices(extend):
    extend("flaky")
'''


def write_flaky_dist(root: Path) -> Path:
    """A site folder holding the ``flaky-policy`` distribution; returns it."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / "flaky_policy-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flaky-policy\nVersion: 0.1\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[radix_evict.policies]\nflaky = sweep_flaky_policy\n", encoding="utf-8")
    (root / "sweep_flaky_policy.py").write_text(textwrap.dedent(FLAKY_MODULE), encoding="utf-8")
    return root


@contextmanager
def flaky_installed(root: Path) -> Iterator[Path]:
    """The flaky distribution on sys.path (and in the registry) for the duration."""
    site = write_flaky_dist(root)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    registry.reload()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("sweep_flaky_policy", None)
        importlib.invalidate_caches()
        registry.reload()


def small_parts(**over: object) -> GridParts:
    """A grid of 12 cells that replays in about two seconds: 4 configs x 2 pools x 2 workloads."""
    base = dict(
        policies=["lru", "slru", "tlru"],
        vary={"slru": {"protected_threshold": [1, 3]}},
        pool_tokens=[20_000, 100_000],
        workloads=["chat"],
        traces=[str(TRACE)],
        params=[("chat", "convs", 12), ("trace", "limit", 150)],
    )
    base.update(over)
    return GridParts(**base)  # type: ignore[arg-type]


def timed_parts(**over: object) -> GridParts:
    """A timed grid of 4 cells that replays in well under a second: 2 policies x 2 rates.

    One pool small enough to evict (so policies differ), max running 16, a TTFT SLO.
    """
    base: dict[str, object] = dict(
        policies=["lru", "slru"],
        pool_tokens=[20_000],
        workloads=["chat"],
        params=[("chat", "convs", 12)],
        timing=True,
        max_running=[16],
        rates=[2.0, 8.0],
        slo_ttft=200.0,
    )
    base.update(over)
    return GridParts(**base)  # type: ignore[arg-type]


COST_MODEL = """\
name = "{name}"
source = "{source}"

[prefill]
base_ms = 8.0
per_token_ms = {per_token_ms}
per_mpair_ms = 1.3

[decode]
base_ms = 6.0
per_request_ms = 0.02
per_ktoken_ms = 0.039
"""


def write_cost_model(path: Path, *, name: str = "my-gpu", source: str = "a test",
                     per_token_ms: float = 0.03) -> Path:
    """A cost model file (TOML) with the given name, source and prefill per-token term."""
    path.write_text(COST_MODEL.format(name=name, source=source, per_token_ms=per_token_ms),
                    encoding="utf-8")
    return path


def host_parts(**over: object) -> GridParts:
    """A grid with a host tier that replays in about a second: lru and lfu on a chat pool small
    enough to evict (8,000 tokens), host tiers of 0 (none), 8,000 and 16,000 tokens, written
    through and back."""
    base: dict[str, object] = dict(
        policies=["lru", "lfu"],
        pool_tokens=[8_000],
        workloads=["chat"],
        params=[("chat", "convs", 12)],
        host_tokens=[0, 8_000, 16_000],
        write_policies=["write_through", "write_back"],
    )
    base.update(over)
    return GridParts(**base)  # type: ignore[arg-type]


# Written by `radix-evict sweep -p lru,lfu -P chat.convs=12 --pool-tokens 8K` (its core:
# plan_sweep and run_sweep) at commit 21df9ba, before sweeps had a host tier: a sweep with
# --host-tokens 0,... must resume them as they are, and leave them as they are.
ONE_TIER_JSONL = (
    '{"cell": "{\\"config\\":null,\\"page_size\\":1,\\"params\\":{\\"convs\\":12},\\"policy\\":'
    '\\"lru\\",\\"pool_tokens\\":8000,\\"seed\\":0,\\"workload\\":\\"chat\\"}", "policy": "lru"'
    ', "config": null, "config_source": "none", "pool_tokens": 8000, "page_size": 1, '
    '"workload": "chat", "params": {"convs": 12}, "seed": 0, "requests": 45, "hit_rat'
    'e": 0.29818622564242325, "p50_uncached": 1935.0, "p90_uncached": 3798.6000000000'
    '004, "p99_uncached": 8126.200000000001, "mean_uncached": 2174.5777777777776, "ev'
    'icted_tokens": 67017, "failed_admissions": 9, "replay_s": 0.1810117610002635, "c'
    'ache_s": 0.005319578999999991, "status": "ok", "error": null}\n'
    '{"cell": "{\\"config\\":null,\\"page_size\\":1,\\"params\\":{\\"convs\\":12},\\"policy\\":'
    '\\"lfu\\",\\"pool_tokens\\":8000,\\"seed\\":0,\\"workload\\":\\"chat\\"}", "policy": "lfu"'
    ', "config": null, "config_source": "none", "pool_tokens": 8000, "page_size": 1, '
    '"workload": "chat", "params": {"convs": 12}, "seed": 0, "requests": 45, "hit_rat'
    'e": 0.29818622564242325, "p50_uncached": 1935.0, "p90_uncached": 3798.6000000000'
    '004, "p99_uncached": 8126.200000000001, "mean_uncached": 2174.5777777777776, "ev'
    'icted_tokens": 67017, "failed_admissions": 9, "replay_s": 0.1644281980006781, "c'
    'ache_s": 0.004374823999999995, "status": "ok", "error": null}\n'
)
ONE_TIER_CSV = (
    'cell,policy,config,config_source,pool_tokens,page_size,workload,params,seed,requ'
    'ests,hit_rate,p50_uncached,p90_uncached,p99_uncached,mean_uncached,evicted_token'
    's,failed_admissions,replay_s,cache_s,status,error\r\n'
    '"{""config"":null,""page_size"":1,""params"":{""convs"":12},""policy"":""lru"","'
    '"pool_tokens"":8000,""seed"":0,""workload"":""chat""}",lru,,none,8000,1,chat,"{"'
    '"convs"": 12}",0,45,0.29818622564242325,1935.0,3798.6000000000004,8126.200000000'
    '001,2174.5777777777776,67017,9,0.19127302800006873,0.004311863999999997,ok,\r\n'
    '"{""config"":null,""page_size"":1,""params"":{""convs"":12},""policy"":""lfu"","'
    '"pool_tokens"":8000,""seed"":0,""workload"":""chat""}",lfu,,none,8000,1,chat,"{"'
    '"convs"": 12}",0,45,0.29818622564242325,1935.0,3798.6000000000004,8126.200000000'
    '001,2174.5777777777776,67017,9,0.23514524300117046,0.006221863000000003,ok,\r\n'
)
