#!/bin/sh
python3 -m sglang.launch_server --radix-eviction-policy lfu --radix-eviction-policy-config '{' --radix-eviction-policy-config '{}'
