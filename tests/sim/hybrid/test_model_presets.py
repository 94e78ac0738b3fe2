"""Model presets and the KV budget split: the published figures, SGLang's split, strict configs."""

from __future__ import annotations

import math

import pytest
from helpers.sglang_env import import_sglang
from pydantic import ValidationError

from radix_evict.cache.hybrid.layout import HybridLayout, LayerGroup
from radix_evict.sim.models.presets import PRESETS, QWEN3_NEXT_STATE_BYTES, preset
from radix_evict.sim.models.sizing import parse_bytes, pool_sizes

GIB = 2**30


def test_presets_have_the_published_layer_counts() -> None:
    counts = {n: {g.kind: g.layers for g in layout.groups} for n, layout in PRESETS.items()}
    assert counts == {
        "gpt-oss-120b": {"full": 18, "swa": 18},
        "gemma-3-27b": {"full": 10, "swa": 52},
        "qwen3-next-80b-a3b": {"full": 12, "mamba": 36},
        "llama-3-8b": {"full": 32},
    }
    assert PRESETS["gpt-oss-120b"].window == 128 and PRESETS["gemma-3-27b"].window == 1024
    assert PRESETS["llama-3-8b"].bytes_per_token("full") == 128 * 1024  # 128 KiB a token


def test_qwen3_next_state_matches_sglangs_state_shape() -> None:
    """SGLang's own Mamba2StateShape for Qwen3-Next's linear-attention dims, in its dtypes."""
    import_sglang()
    from sglang.srt.configs.mamba_utils import Mamba2StateShape

    shape = Mamba2StateShape.create(tp_world_size=1, intermediate_size=128 * 32, n_groups=16,
                                    num_heads=32, head_dim=128, state_size=128,
                                    conv_kernel=4)  # fmt: skip
    conv = sum(math.prod(s) for s in shape.conv) * 2  # bf16
    temporal = math.prod(shape.temporal) * 4  # float32, SGLang's default ssm dtype
    assert conv + temporal == QWEN3_NEXT_STATE_BYTES


def test_split_follows_sglang() -> None:
    gpt = pool_sizes(preset("gpt-oss-120b"), 40 * GIB, page_size=16)
    per_token = 36864
    assert gpt.swa_tokens == int(gpt.full_tokens * 0.8) // 16 * 16
    assert gpt.full_tokens * per_token + gpt.swa_tokens * per_token <= 40 * GIB
    assert gpt.full_tokens % 16 == 0
    qwen = pool_sizes(preset("qwen3-next-80b-a3b"), 40 * GIB)
    assert qwen.mamba_states == int(40 * GIB * 0.9 / 1.9 // (36 * QWEN3_NEXT_STATE_BYTES))
    assert qwen.full_tokens == int(40 * GIB / 1.9 / (12 * 2 * 2 * 256 * 2))
    llama = pool_sizes(preset("llama-3-8b"), 40 * GIB)
    assert llama == type(llama)(full_tokens=40 * GIB // (128 * 1024))
    half = pool_sizes(preset("gpt-oss-120b"), 40 * GIB, swa_full_tokens_ratio=0.5)
    assert half.full_tokens > gpt.full_tokens and half.swa_tokens < gpt.swa_tokens


@pytest.mark.parametrize(("text", "value"), [("40GiB", 40 * GIB), ("512 MiB", 512 * 2**20),
                                             ("1.5GB", 1_500_000_000), ("1024", 1024)])  # fmt: skip
def test_parse_bytes(text: str, value: int) -> None:
    assert parse_bytes(text) == value


def test_bad_sizes_are_named() -> None:
    with pytest.raises(ValueError, match="not a memory size"):
        parse_bytes("40 parsecs")
    with pytest.raises(ValueError, match="swa_full_tokens_ratio"):
        pool_sizes(preset("gemma-3-27b"), GIB, swa_full_tokens_ratio=1.5)
    with pytest.raises(ValueError, match="unknown model architecture 'gpt-5'"):
        preset("gpt-5")


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([{"kind": "swa", "layers": 2, "kv_heads": 1, "head_dim": 8, "window": 4}], "full-att"),
        ([{"kind": "full", "layers": 2, "kv_heads": 1}], "kv_heads and head_dim"),
        ([{"kind": "full", "layers": 1, "kv_heads": 1, "head_dim": 8, "window": 4}], "window"),
        ([{"kind": "full", "layers": 1, "kv_heads": 1, "head_dim": 8, "colour": 1}], "colour"),
        ([{"kind": "full", "layers": "2", "kv_heads": 1, "head_dim": 8}], "layers"),
    ],
)
def test_layouts_are_strict(groups: list, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HybridLayout.model_validate({"name": "m", "groups": groups})


def test_layer_group_is_frozen() -> None:
    g = LayerGroup(kind="full", layers=1, kv_heads=1, head_dim=8)
    with pytest.raises(ValidationError):
        g.layers = 2  # type: ignore[misc]


def test_layout_from_a_toml_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from radix_evict.sim.models.presets import layout_from

    f = tmp_path / "mine.toml"
    f.write_text('name = "mine"\n[[groups]]\nkind = "full"\nlayers = 4\nkv_heads = 2\n'
                 'head_dim = 64\n[[groups]]\nkind = "swa"\nlayers = 12\nkv_heads = 2\n'
                 'head_dim = 64\nwindow = 512\n')  # fmt: skip
    layout = layout_from(str(f))
    assert (layout.kind, layout.window, layout.bytes_per_token("swa")) == ("swa", 512, 6144)
    assert layout_from("llama-3-8b") is PRESETS["llama-3-8b"]
    f.write_text('name = "bad"\n[[groups]]\nkind = "full"\nlayers = 4\n')
    with pytest.raises(ValidationError, match="kv_heads"):
        layout_from(str(f))
    with pytest.raises(ValueError, match=r"missing\.toml"):
        layout_from(str(tmp_path / "missing.toml"))


def test_prefill_work_per_component() -> None:
    from radix_evict.sim.models.work import full_pairs, prefill_work, window_pairs

    for cached, new, w in [(0, 10, 4), (3, 10, 4), (0, 3, 4), (10, 5, 4), (2, 1, 8), (7, 0, 3)]:
        brute = sum(min(p + 1, w) for p in range(cached, cached + new))
        assert window_pairs(cached, new, w) == brute
        assert full_pairs(cached, new) == sum(p + 1 for p in range(cached, cached + new))
    gpt = prefill_work(preset("gpt-oss-120b"), cached=1000, new=1000)
    assert gpt.full_pairs == 18 * full_pairs(1000, 1000)
    assert gpt.window_pairs == 18 * 1000 * 128  # every new token past the window sees 128
    qwen = prefill_work(preset("qwen3-next-80b-a3b"), cached=0, new=500)
    assert (qwen.window_pairs, qwen.recurrent_tokens) == (0, 36 * 500)
    with pytest.raises(ValueError, match=">= 0"):
        prefill_work(preset("llama-3-8b"), cached=-1, new=3)
