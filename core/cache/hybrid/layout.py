"""A model's KV layout as layer groups: full attention, a sliding window, recurrent state.

What the hybrid cache needs to know of a model: how many layers of each kind,
their KV bytes per token (attention) or bytes per saved state (recurrent), and
the window. A full-attention-only layout is a plain ``RadixCache`` model. The
configs are strict: an unknown key, a wrong type or a missing field is an error
that names it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

KINDS = ("full", "swa", "mamba")


class LayerGroup(BaseModel):
    """Layers of one kind. Attention: KV heads x head size; recurrent: bytes per state."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    kind: Literal["full", "swa", "mamba"]
    layers: int = Field(ge=1)
    kv_heads: int | None = Field(default=None, ge=1, description="attention: KV heads")
    head_dim: int | None = Field(default=None, ge=1, description="attention: head size")
    dtype_bytes: int = Field(default=2, ge=1, description="bytes per KV element (bf16: 2)")
    window: int | None = Field(default=None, ge=1, description="swa: window, tokens")
    state_bytes: int | None = Field(default=None, ge=1, description="mamba: bytes/state/layer")

    @model_validator(mode="after")
    def _fields_of_kind(self) -> LayerGroup:
        attention = self.kind in ("full", "swa")
        if attention and (self.kv_heads is None or self.head_dim is None):
            raise ValueError(f"{self.kind} layers need kv_heads and head_dim")
        if (self.kind == "swa") != (self.window is not None):
            raise ValueError("window: set for swa layers, and only for them")
        if (self.kind == "mamba") != (self.state_bytes is not None):
            raise ValueError("state_bytes: set for mamba layers, and only for them")
        return self

    @property
    def bytes_per_token(self) -> int:
        """K and V of every layer of the group, per token (0 for recurrent layers)."""
        if self.kv_heads is None or self.head_dim is None:
            return 0
        return 2 * self.kv_heads * self.head_dim * self.dtype_bytes * self.layers

    @property
    def bytes_per_state(self) -> int:
        return (self.state_bytes or 0) * self.layers


class HybridLayout(BaseModel):
    """A model's layer groups: one full-attention group and at most one other."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    groups: list[LayerGroup] = Field(min_length=1)
    source: str = Field(default="", description="where the figures come from")

    @model_validator(mode="after")
    def _one_of_each(self) -> HybridLayout:
        kinds: list[str] = [g.kind for g in self.groups]
        for kind in KINDS:
            if kinds.count(kind) > 1:
                raise ValueError(f"groups: one {kind} group at most (merge them)")
        if "full" not in kinds:
            raise ValueError("groups: a full-attention group is needed (SGLang's base component)")
        if "swa" in kinds and "mamba" in kinds:
            raise ValueError("groups: a window and a recurrent group together is not modelled")
        return self

    def group(self, kind: str) -> LayerGroup | None:
        return next((g for g in self.groups if g.kind == kind), None)

    @property
    def kind(self) -> str:
        """'full', 'swa' or 'mamba': the auxiliary component, if any."""
        return next((g.kind for g in self.groups if g.kind != "full"), "full")

    @property
    def window(self) -> int | None:
        g = self.group("swa")
        return g.window if g else None

    @property
    def layers(self) -> int:
        return sum(g.layers for g in self.groups)

    def bytes_per_token(self, kind: str) -> int:
        g = self.group(kind)
        return g.bytes_per_token if g else 0

    @property
    def bytes_per_state(self) -> int:
        g = self.group("mamba")
        return g.bytes_per_state if g else 0
