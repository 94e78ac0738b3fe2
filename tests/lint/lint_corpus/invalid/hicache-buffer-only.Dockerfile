FROM lmsysorg/sglang:v0.5.23
# buffer_only without a storage backend: SGLang refuses to start.
CMD python3 -m sglang.launch_server --model-path m \
    --enable-hierarchical-cache --hicache-host-memory-mode buffer_only
