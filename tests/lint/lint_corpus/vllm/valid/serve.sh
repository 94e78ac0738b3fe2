#!/bin/sh
# radix-evict's tlru in vLLM's CPU offload tier.
exec vllm serve meta-llama/Llama-3.1-8B-Instruct \
  --kv-transfer-config '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
    "kv_connector_extra_config": {"cpu_bytes_to_use": 8589934592,
      "eviction_policy": "radix_evict_tlru", "cache_policy_module_path": "radix_evict.vllm",
      "radix_eviction_config": {"threshold": 512, "next_prompt_estimate": 64}}}'
