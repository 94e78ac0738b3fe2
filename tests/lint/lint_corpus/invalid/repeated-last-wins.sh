#!/bin/sh
python3 -m sglang.launch_server --model-path m --radix-eviction-policy lfu --radix-eviction-policy lfuu
