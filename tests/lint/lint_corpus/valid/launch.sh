#!/usr/bin/env bash
# Start SGLang with a segmented LRU cache.
set -e
MODEL=${MODEL:-meta-llama/Llama-3.1-8B-Instruct}
python -m sglang.launch_server --model-path "$MODEL" \
  --radix-eviction-policy slru \
  --radix-eviction-policy-config '{"protected_threshold": 4}' \
  2>&1 | tee /var/log/sglang.log
