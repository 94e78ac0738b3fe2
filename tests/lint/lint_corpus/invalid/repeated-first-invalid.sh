#!/bin/sh
# SGLang uses the last value, but argparse checks each one as it reads it: lfuu stops it.
python3 -m sglang.launch_server --model-path m --radix-eviction-policy lfuu --radix-eviction-policy lfu
