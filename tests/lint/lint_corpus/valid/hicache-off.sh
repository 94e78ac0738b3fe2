#!/bin/sh
# HiCache flags without --enable-hierarchical-cache: SGLang ignores them (warnings).
exec python3 -m sglang.launch_server --model-path m --hicache-ratio 0.5 --hicache-write-policy write_back
