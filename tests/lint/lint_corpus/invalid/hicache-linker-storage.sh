#!/bin/sh
# The unified-cache external linker does not use the HiCache storage backend.
exec python3 -m sglang.launch_server --model-path m \
  --enable-unified-cache-external-linker --hicache-storage-backend mooncake
