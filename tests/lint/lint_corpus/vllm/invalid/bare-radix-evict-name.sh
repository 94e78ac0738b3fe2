#!/bin/sh
# vLLM looks up "slru" in radix_evict.vllm, which serves radix_evict_slru.
exec vllm serve m --kv-transfer-config '{"kv_connector": "OffloadingConnector", "kv_connector_extra_config": {"cpu_bytes_to_use": 1073741824, "eviction_policy": "slru", "cache_policy_module_path": "radix_evict.vllm"}}'
