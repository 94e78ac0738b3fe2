#!/bin/sh
exec python3 -m sglang.launch_server --model-path m --enable-hierarchical-cache \
  --hicache-write-polcy write_back
