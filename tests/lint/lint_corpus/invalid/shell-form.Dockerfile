FROM lmsysorg/sglang:v0.5.23
CMD python3 -m sglang.launch_server --model-path m \
    --radix-eviction-policy tlru
