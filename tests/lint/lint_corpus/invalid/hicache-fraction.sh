#!/bin/sh
# SGLang checks the fraction at every launch, HiCache on or off.
exec python3 -m sglang.launch_server --model-path m --hicache-host-memory-fraction 0
