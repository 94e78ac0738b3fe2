#!/bin/sh
# --hicache-s could be --hicache-size or any --hicache-storage-* flag.
exec python3 -m sglang.launch_server --model-path m --enable-hierarchical-cache --hicache-s 64
