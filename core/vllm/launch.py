"""Build vLLM 0.33.0's CPU offload manager the way a launch does, from an extra config.

``vllm serve --kv-transfer-config`` reaches the tier as ``CPUOffloadingSpec(config)`` then
``spec.get_manager()``, which builds the cache policy. :func:`build_manager` runs those two
real steps with a minimal :class:`OffloadingConfig` (one KV group, one worker), so the
check and the tests see what a launch sees: vLLM's own lookup of ``eviction_policy``, its
import of ``cache_policy_module_path``, and radix-evict's validation of its config.
vLLM is imported inside the functions only.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from radix_evict.vllm.names import OFFLOAD_CONFIG_MODULE, SPEC_MODULE


def offloading_config(extra_config: Mapping[str, Any], *, worker_kv_bytes_per_block: int = 0,
                      tokens_per_block: int = 16) -> Any:
    """A one-group, one-worker ``OffloadingConfig`` carrying ``extra_config``."""
    cfg = importlib.import_module(OFFLOAD_CONFIG_MODULE)
    return cfg.OffloadingConfig(
        groups=(cfg.OffloadingGroupConfig(tokens_per_block=tokens_per_block,
                                          layer_names=("layer.0",), group_id=0),),
        worker_kv_bytes_per_block=worker_kv_bytes_per_block,
        enable_kv_cache_events=False,
        extra_config=dict(extra_config),
        engine_id="radix-evict-check",
        model=cfg.OffloadingModelConfig(name="radix-evict-check", dtype="float16"),
        cache=cfg.OffloadingCacheConfig(tokens_per_hash=tokens_per_block, blocks_per_chunk=1),
        parallel=cfg.OffloadingParallelConfig(
            rank=0, world_size=1, tp_size=1, pp_size=1, pcp_size=1, dcp_size=1,
            data_parallel_index=0, data_parallel_size=1, data_parallel_rank_local=None,
            is_parallelism_agnostic=True,
        ),
    )


def build_manager(extra_config: Mapping[str, Any], num_chunks: int | None = None) -> Any:
    """vLLM's ``CPUOffloadingSpec(...).get_manager()`` for this extra config.

    ``num_chunks`` sizes the tier (``cpu_bytes_to_use`` is set to that many aligned chunks);
    None keeps the config's own ``cpu_bytes_to_use`` and sizes nothing (0 chunks), as the
    check needs: it asks whether the policy builds, not how large the tier is.
    """
    spec_cls = importlib.import_module(SPEC_MODULE).CPUOffloadingSpec
    extra = dict(extra_config)
    bytes_per_block = 0
    if num_chunks is not None:
        bytes_per_block = int(spec_cls.BLOCK_SIZE_ALIGNMENT)
        extra["cpu_bytes_to_use"] = num_chunks * bytes_per_block
    spec = spec_cls(offloading_config(extra, worker_kv_bytes_per_block=bytes_per_block))
    return spec.get_manager()
