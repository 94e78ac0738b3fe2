#!/bin/sh
# argparse expands the unique prefix --radix-eviction-policy-c: a warning, not an error.
exec python3 -m sglang.launch_server --model-path m --radix-eviction-policy slru \
  --radix-eviction-policy-c '{"protected_threshold": 5}'
