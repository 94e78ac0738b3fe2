#!/bin/sh
# With the radix cache disabled SGLang builds no eviction strategy: the bad key is a warning.
python3 -m sglang.launch_server --model-path m --disable-radix-cache \
  --radix-eviction-policy priority --radix-eviction-policy-config '{"x": 1}'
