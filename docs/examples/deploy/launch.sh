#!/bin/sh
# An example launch script for `radix-evict lint docs/examples/deploy/` (README).
exec python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct \
    --radix-eviction-policy tlru \
    --radix-eviction-policy-config '{"threshold": 1024, "next_prompt_estimate": 128}'
