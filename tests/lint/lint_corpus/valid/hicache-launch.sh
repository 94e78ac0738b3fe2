#!/usr/bin/env bash
# SGLang with HiCache: a host tier twice the device pool, written back on eviction.
# The direct io backend makes SGLang run the page_first_direct layout (a warning).
set -e
python3 -m sglang.launch_server --model-path "${MODEL:-Qwen/Qwen3-8B}" \
  --radix-eviction-policy lfu \
  --enable-hierarchical-cache \
  --hicache-ratio 2 \
  --hicache-write-policy write_back \
  --hicache-io-backend direct
