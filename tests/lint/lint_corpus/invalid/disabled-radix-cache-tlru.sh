#!/bin/sh
# The tlru check is a server-argument check: it runs with the radix cache disabled too.
python3 -m sglang.launch_server --model-path m --disable-radix-cache --radix-eviction-policy tlru
