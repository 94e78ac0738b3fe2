FROM lmsysorg/sglang:v0.5.23
# buffer_only: host memory stages pages for the storage backend; SGLang turns
# write_back into write_through there (a warning).
ENTRYPOINT ["python3", "-m", "sglang.launch_server", "--model-path", "m"]
CMD ["--enable-hierarchical-cache", "--hicache-host-memory-mode", "buffer_only", \
     "--hicache-storage-backend", "file", "--hicache-write-policy", "write_back"]
