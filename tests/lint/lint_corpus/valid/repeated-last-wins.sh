#!/bin/sh
# Both values are valid choices; SGLang uses the last one (a warning names the first).
python3 -m sglang.launch_server --model-path m --radix-eviction-policy slru --radix-eviction-policy lfu
