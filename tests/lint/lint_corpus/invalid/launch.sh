#!/bin/bash
MODEL=meta-llama/Llama-3.1-8B-Instruct
python -m sglang.launch_server --model-path "$MODEL" \
  --radix-eviction-policy slru \
  --radix-eviction-policy-config '{"protected_treshold": 4}'
