"""Layouts of four models, from their published ``config.json`` files (Hugging Face hub).

Figures per model (KV in bf16, 2 bytes an element):

- ``gpt-oss-120b`` (``openai/gpt-oss-120b``): 36 layers, ``layer_types`` alternating
  ``sliding_attention`` / ``full_attention`` (18 + 18), ``num_key_value_heads`` 8,
  ``head_dim`` 64, ``sliding_window`` 128.
- ``gemma-3-27b`` (``google/gemma-3-27b-it``, ``text_config``): 62 layers,
  ``sliding_window_pattern`` 6 (every sixth layer global: 10 full, 52 sliding),
  ``num_key_value_heads`` 16, ``head_dim`` 128, ``sliding_window`` 1024.
- ``qwen3-next-80b-a3b`` (``Qwen/Qwen3-Next-80B-A3B-Instruct``): 48 layers,
  ``full_attention_interval`` 4 (12 gated-attention layers, 36 Gated DeltaNet
  layers), attention ``num_key_value_heads`` 2, ``head_dim`` 256; linear attention
  ``linear_num_key_heads`` 16, ``linear_num_value_heads`` 32, key and value head
  size 128, ``linear_conv_kernel_dim`` 4. SGLang sizes one layer's state
  (``configs/qwen3_next.py:288-314``, ``configs/mamba_utils.py:195-245``) as a
  float32 temporal state of 32 x 128 x 128 (2 MiB) plus a bf16 conv state of
  (4096 + 2 x 16 x 128) x 3 (48 KiB): 2,146,304 bytes.
- ``llama-3-8b`` (``meta-llama/Meta-Llama-3-8B``): 32 layers, all full attention,
  ``num_key_value_heads`` 8, ``head_dim`` 128 (4096 / 32): the baseline.
"""

from __future__ import annotations

import sys
from pathlib import Path

from radix_evict.cache.hybrid.layout import HybridLayout, LayerGroup

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

QWEN3_NEXT_STATE_BYTES = 32 * 128 * 128 * 4 + (32 * 128 + 2 * 16 * 128) * (4 - 1) * 2

PRESETS: dict[str, HybridLayout] = {
    "gpt-oss-120b": HybridLayout(
        name="gpt-oss-120b",
        groups=[
            LayerGroup(kind="full", layers=18, kv_heads=8, head_dim=64),
            LayerGroup(kind="swa", layers=18, kv_heads=8, head_dim=64, window=128),
        ],
        source="huggingface.co/openai/gpt-oss-120b config.json",
    ),
    "gemma-3-27b": HybridLayout(
        name="gemma-3-27b",
        groups=[
            LayerGroup(kind="full", layers=10, kv_heads=16, head_dim=128),
            LayerGroup(kind="swa", layers=52, kv_heads=16, head_dim=128, window=1024),
        ],
        source="huggingface.co/google/gemma-3-27b-it config.json (text_config)",
    ),
    "qwen3-next-80b-a3b": HybridLayout(
        name="qwen3-next-80b-a3b",
        groups=[
            LayerGroup(kind="full", layers=12, kv_heads=2, head_dim=256),
            LayerGroup(kind="mamba", layers=36, state_bytes=QWEN3_NEXT_STATE_BYTES),
        ],
        source="huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct config.json",
    ),
    "llama-3-8b": HybridLayout(
        name="llama-3-8b",
        groups=[LayerGroup(kind="full", layers=32, kv_heads=8, head_dim=128)],
        source="huggingface.co/meta-llama/Meta-Llama-3-8B config.json",
    ),
}


def preset(name: str) -> HybridLayout:
    """The layout called ``name``; a clear error lists the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise ValueError(f"unknown model architecture {name!r}; known: {known}") from None


def layout_from(name_or_path: str) -> HybridLayout:
    """A preset by name, or a layout of your own from a TOML file (``name``, ``[[groups]]``)."""
    if not name_or_path.endswith(".toml"):
        return preset(name_or_path)
    path = Path(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"model layout {path}: {e}") from e
    return HybridLayout.model_validate(data)
