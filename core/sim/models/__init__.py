"""Model presets for hybrid replays: layer groups from the models' published configs.

``presets`` holds the layouts (gpt-oss-120b, Gemma 3 27B, Qwen3-Next-80B-A3B and
Llama 3 8B as the full-attention baseline), each citing its config; ``sizing``
turns a KV memory budget into pool sizes with SGLang's split between components.
"""

__all__ = ["presets", "sizing", "work"]
