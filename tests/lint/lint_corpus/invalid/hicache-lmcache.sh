#!/bin/sh
exec python3 -m sglang.launch_server --model-path m --enable-lmcache --enable-hicache
