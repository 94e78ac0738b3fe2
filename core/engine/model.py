"""A tiny decoder-only transformer whose attention keeps K/V in a slot pool.

Random weights from a seed (no download). Each layer writes the K/V of the
tokens it runs into the pool at the slots the allocator handed out, then reads
the whole context back from the pool by slot index. A request therefore only
runs prefill over its uncached tail: the cached prefix's K/V are gathered from
the slots ``match_prefix`` returned. Rotary embeddings use absolute positions,
so a cached and an uncached run compute the same numbers.

``forward_dense`` runs the same weights with ordinary causal attention and no
pool at all: it is the independent oracle the tests compare against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, cast

import torch
from torch import Tensor, nn


class KVBuffers(Protocol):
    """What the model needs from a pool: one K and one V tensor per layer."""

    k_buffer: list[Tensor]
    v_buffer: list[Tensor]


@dataclass(frozen=True)
class TinyConfig:
    """Shape of the tiny decoder. The defaults suit a CPU replay of a few seconds."""

    vocab_size: int = 512
    d_model: int = 256
    layers: int = 4
    heads: int = 4
    ffn: int = 1024
    rope_theta: float = 10_000.0
    logit_scale: float = 4.0

    @property
    def head_dim(self) -> int:
        """Per-head width; ``d_model`` must divide evenly by ``heads``."""
        return self.d_model // self.heads


# ``--model NAME``. On a GPU the cpu-sized decoder is all kernel launches: its prefill
# takes the same time for 10 tokens as for 1,000, so no cache can lower its TTFT.
# ``tiny-gpu`` is wide enough that prefill time grows with the tokens there: 405M
# parameters (1.6 GB in float32, about 0.8 GFLOP a token; its seeded weights take
# about 5 s to draw on a cpu, once per replay).
MODEL_PRESETS: dict[str, TinyConfig] = {
    "tiny": TinyConfig(),
    "tiny-gpu": TinyConfig(d_model=2048, layers=8, heads=16, ffn=8192),
}


def _rms_norm(x: Tensor, weight: Tensor) -> Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def _rope(positions: Tensor, head_dim: int, theta: float, dtype: torch.dtype
          ) -> tuple[Tensor, Tensor]:
    """cos and sin [B, T, 1, head_dim/2] of absolute ``positions`` [B, T], once per forward."""
    half = head_dim // 2
    freqs = theta ** (-torch.arange(half, device=positions.device, dtype=torch.float64) / half)
    angles = positions.to(torch.float64)[..., None] * freqs
    return angles.cos().to(dtype)[:, :, None, :], angles.sin().to(dtype)[:, :, None, :]


def _rotate(x: Tensor, rope: tuple[Tensor, Tensor]) -> Tensor:
    """Apply rotary embeddings to x [B, T, H, D]."""
    cos, sin = rope
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """Masked softmax attention. q: [B,T,H,D]; k, v: [B,L,H,D]; mask: [B,T,L] bool."""
    scores = torch.einsum("bthd,blhd->bhtl", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask[:, None, :, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("bhtl,blhd->bthd", probs, v)


class _Layer(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.norm1 = nn.Parameter(torch.ones(d))
        self.norm2 = nn.Parameter(torch.ones(d))
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, cfg.ffn, bias=False)
        self.down = nn.Linear(cfg.ffn, d, bias=False)


class TinyDecoder(nn.Module):
    """Decoder-only transformer; counts the tokens it runs in prefill and decode.

    The counters are the ground truth for "prefill work": the engine's own
    accounting is checked against them, not the other way round.
    """

    def __init__(self, cfg: TinyConfig | None = None, seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg = cfg or TinyConfig()
        if cfg.d_model % cfg.heads or cfg.head_dim % 2:
            raise ValueError("d_model must split into heads of even width")
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(_Layer(cfg) for _ in range(cfg.layers))
        self.final_norm = nn.Parameter(torch.ones(cfg.d_model))
        self.unembed = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self._init_weights(seed)
        self.requires_grad_(False)
        self.prefill_tokens = 0
        self.decode_tokens = 0

    def _init_weights(self, seed: int) -> None:
        """Seeded weights; a wide logit spread keeps greedy argmax free of near-ties."""
        gen = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            if "norm" in name:
                continue
            fan_in = p.shape[-1]
            std = 1.0 if name == "embed.weight" else 1.0 / math.sqrt(fan_in)
            if name == "unembed.weight":
                std *= self.cfg.logit_scale
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=gen) * std)

    @property
    def device(self) -> torch.device:
        """Where the weights live (the pool must be on the same device)."""
        return self.embed.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """Weight dtype; the pool's K/V buffers must match it."""
        return self.embed.weight.dtype

    # -- the pool-backed path -------------------------------------------------

    @torch.no_grad()
    def prefill(self, tokens: Tensor, start: int, row: Tensor, kv: KVBuffers) -> Tensor:
        """Run the uncached tail ``tokens`` (positions ``start..``) of one request.

        ``row`` holds the request's slots in token order; ``row[:start]`` is
        the cached prefix, whose K/V are only read. Returns [T, vocab] logits.
        """
        t = tokens.numel()
        positions = torch.arange(start, start + t, device=self.device)[None]
        ctx = row[: start + t][None]
        lens = torch.tensor([start + t], device=self.device)
        self.prefill_tokens += t
        slots = row[start : start + t][None]
        return self._forward(tokens[None], positions, slots, ctx, lens, kv)[0]

    @torch.no_grad()
    def decode(
        self, tokens: Tensor, positions: Tensor, slots: Tensor, ctx: Tensor, lens: Tensor,
        kv: KVBuffers,
    ) -> Tensor:
        """One batched decode step: B requests, one new token each.

        tokens, positions, slots: [B]; ctx: [B, L] slots in position order
        (padded rows repeat a valid slot of their own request); lens: [B]
        context length including the new token. Returns [B, vocab] logits.
        """
        self.decode_tokens += tokens.numel()
        logits = self._forward(tokens[:, None], positions[:, None], slots[:, None], ctx, lens, kv)
        return logits[:, 0]

    def _forward(
        self, tokens: Tensor, positions: Tensor, slots: Tensor, ctx: Tensor, lens: Tensor,
        kv: KVBuffers,
    ) -> Tensor:
        cfg = self.cfg
        b, t = tokens.shape
        keys = torch.arange(ctx.shape[1], device=self.device)
        mask = (keys[None, None, :] <= positions[:, :, None]) & (
            keys[None, None, :] < lens[:, None, None]
        )
        flat_slots = slots.reshape(-1)
        rope = _rope(positions, cfg.head_dim, cfg.rope_theta, self.dtype)
        x = self.embed(tokens)
        for i, layer in enumerate(self._blocks()):
            q, k, v = self._qkv(layer, x, rope)
            kv.k_buffer[i][flat_slots] = k.reshape(b * t, cfg.heads, cfg.head_dim)
            kv.v_buffer[i][flat_slots] = v.reshape(b * t, cfg.heads, cfg.head_dim)
            # Read everything back from the pool, the new tokens included.
            attn = _attend(q, kv.k_buffer[i][ctx], kv.v_buffer[i][ctx], mask)
            x = self._finish_layer(layer, x, attn)
        return self.unembed(_rms_norm(x, self.final_norm))

    # -- the dense oracle -----------------------------------------------------

    @torch.no_grad()
    def forward_dense(self, tokens: Tensor) -> Tensor:
        """Plain causal attention over ``tokens`` [T], no pool: [T, vocab] logits."""
        t = tokens.numel()
        positions = torch.arange(t, device=self.device)[None]
        mask = torch.ones(t, t, dtype=torch.bool, device=self.device).tril()[None]
        rope = _rope(positions, self.cfg.head_dim, self.cfg.rope_theta, self.dtype)
        x = self.embed(tokens[None])
        for layer in self._blocks():
            q, k, v = self._qkv(layer, x, rope)
            x = self._finish_layer(layer, x, _attend(q, k, v, mask))
        return self.unembed(_rms_norm(x, self.final_norm))[0]

    # -- shared pieces --------------------------------------------------------

    def _blocks(self) -> list[_Layer]:
        return [cast(_Layer, m) for m in self.layers]

    def _qkv(self, layer: _Layer, x: Tensor, rope: tuple[Tensor, Tensor]
             ) -> tuple[Tensor, Tensor, Tensor]:
        cfg = self.cfg
        b, t, _ = x.shape
        qkv = layer.qkv(_rms_norm(x, layer.norm1)).view(b, t, 3, cfg.heads, cfg.head_dim)
        q = _rotate(qkv[:, :, 0], rope)
        k = _rotate(qkv[:, :, 1], rope)
        return q, k, qkv[:, :, 2]

    @staticmethod
    def _finish_layer(layer: _Layer, x: Tensor, attn: Tensor) -> Tensor:
        b, t = x.shape[:2]
        x = x + layer.out(attn.reshape(b, t, -1))
        h = _rms_norm(x, layer.norm2)
        return x + layer.down(torch.nn.functional.gelu(layer.up(h)))
