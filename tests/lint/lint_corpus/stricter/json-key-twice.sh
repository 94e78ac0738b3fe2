#!/bin/sh
python3 -m sglang.launch_server --radix-eviction-policy slru --radix-eviction-policy-config '{"protected_threshold": 4, "protected_threshold": 3}'
