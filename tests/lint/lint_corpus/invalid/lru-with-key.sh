#!/bin/sh
python3 -m sglang.launch_server --radix-eviction-policy-config '{"protected_threshold": 3}'
