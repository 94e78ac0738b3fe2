"""A hybrid-model grid's axes: the model architecture, its KV budget and its split.

A grid with hybrid axes (``Grid.hybrid``, :class:`HybridAxes`) replays each
cell through the hybrid cache of a model's layout (sliding-window or Mamba
state beside full attention: :mod:`radix_evict.sim.hybrid_replay`, timed
through :mod:`radix_evict.sim.hybrid_timed`; docs/hybrid.md). The axes expand
after the fleet point and before the policy: architecture, then KV budget,
then the split ratio of that architecture's kind (``swa_full_tokens_ratio``
for a sliding-window model, ``mamba_full_memory_ratio`` for a Mamba one; a
full-attention layout takes neither). Each cell carries its
:class:`HybridPoint` and its key gains a ``hybrid`` entry with only what was
given, so a cell of a grid without hybrid axes keeps the key it always had
and result files written before resume as they did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from radix_evict.sim.sweep.keys import key_number
from radix_evict.sim.sweep.values import SweepValueError, parse_numbers

if TYPE_CHECKING:
    from radix_evict.cache.host_tier import HostTierSpec

__all__ = ["HYBRID_KEYS", "HybridAxes", "HybridPoint", "make_hybrid_axes", "read_hybrid_keys"]

T = TypeVar("T")

# A grid file's names (the command line's --model-arch, --kv-memory, ...).
HYBRID_KEYS = ("model_arch", "kv_memory", "swa_full_tokens_ratio", "mamba_full_memory_ratio")


@dataclass(frozen=True)
class HybridPoint:
    """One cell's model: its layout's name (or TOML file), KV budget and split as given."""

    model_arch: str
    kv_memory: str | None = None  # None: sized from the cell's pool_tokens
    swa_ratio: float | None = None  # None: SGLang's default for the layout's kind
    mamba_ratio: float | None = None

    def key(self) -> dict[str, Any]:
        """The ``hybrid`` entry of a cell's key: the architecture and what else was given."""
        out: dict[str, Any] = {"model_arch": self.model_arch}
        for name, v in (("kv_memory", self.kv_memory), ("swa_ratio", key_number(self.swa_ratio)),
                        ("mamba_ratio", key_number(self.mamba_ratio))):
            if v is not None:
                out[name] = v
        return out

    def ratios(self) -> tuple[float | None, float | None]:
        """The split this point replays with (SGLang's defaults where not given), by kind."""
        from radix_evict.sim.models.presets import layout_from
        from radix_evict.sim.models.sizing import MAMBA_FULL_MEMORY_RATIO, SWA_FULL_TOKENS_RATIO

        kind = layout_from(self.model_arch).kind
        swa = (SWA_FULL_TOKENS_RATIO if self.swa_ratio is None else self.swa_ratio)
        mamba = (MAMBA_FULL_MEMORY_RATIO if self.mamba_ratio is None else self.mamba_ratio)
        return (swa if kind == "swa" else None), (mamba if kind == "mamba" else None)

    def spec(self, pool_tokens: int | None, default_tokens: int, page_size: int) -> Any:
        """The HybridSpec a cell replays with (ValueError for a budget that does not fit)."""
        from radix_evict.sim.hybrid_replay import build_spec
        from radix_evict.sim.models.presets import layout_from

        return build_spec(layout_from(self.model_arch), kv_memory=self.kv_memory,
                          pool_tokens=pool_tokens, default_tokens=default_tokens,
                          page_size=page_size, swa_ratio=self.swa_ratio,
                          mamba_ratio=self.mamba_ratio)

    @property
    def label(self) -> str:
        """``gpt-oss-120b, kv 40GiB, swa ratio 0.25``: how messages and tables name it."""
        parts = [self.model_arch]
        if self.kv_memory is not None:
            parts.append(f"kv {self.kv_memory}")
        if self.swa_ratio is not None:
            parts.append(f"swa ratio {self.swa_ratio:g}")
        if self.mamba_ratio is not None:
            parts.append(f"mamba ratio {self.mamba_ratio:g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class HybridAxes:
    """Architectures, KV budgets and the two split ratios (each applies to its kind only)."""

    archs: tuple[str, ...]
    kv_memories: tuple[str | None, ...] = (None,)
    swa_ratios: tuple[float | None, ...] = (None,)
    mamba_ratios: tuple[float | None, ...] = (None,)

    def points(self) -> list[HybridPoint]:
        """Every point in a fixed order (architecture, budget, ratio), each once."""
        from radix_evict.sim.models.presets import layout_from

        out: dict[HybridPoint, None] = {}
        for arch in self.archs:
            kind = layout_from(arch).kind
            swas = self.swa_ratios if kind == "swa" else (None,)
            mambas = self.mamba_ratios if kind == "mamba" else (None,)
            for kv in self.kv_memories:
                for s in swas:
                    for m in mambas:
                        out.setdefault(HybridPoint(arch, kv, s, m))
        return list(out)

    def count(self) -> int:
        return len(self.points())


def make_hybrid_axes(archs: list[str] | None, kv: list[str] | None, swa: list[float] | None,
                     mamba: list[float] | None, *, hosts: Sequence[HostTierSpec]
                     ) -> HybridAxes | None:
    """The hybrid axes (None: none); SweepValueError names a bad key.

    Each architecture must load (a preset or a TOML layout) and each budget
    parse; each host point (``hosts``) must be one the hybrid host tier models
    (write-through only, no admission); a fleet's replicas each have the
    model's cache (``sim.fleet.hybrid``).
    """
    from radix_evict.cache.hybrid.host import check_host_spec
    from radix_evict.sim.models.presets import layout_from
    from radix_evict.sim.models.sizing import parse_bytes

    if not archs:
        given = [n for n, v in zip(HYBRID_KEYS[1:], (kv, swa, mamba), strict=True) if v]
        if given:
            raise SweepValueError(f"{', '.join(given)}: hybrid-model options; give model_arch "
                                  "(--model-arch) to use them")
        return None
    for spec in hosts:
        try:
            check_host_spec(spec)
        except ValueError as exc:
            raise SweepValueError(f"model_arch with {exc}") from None
    for arch in archs:
        try:
            layout_from(arch)
        except Exception as exc:
            raise SweepValueError(f"model_arch {arch}: {exc}") from None
    for text in kv or []:
        try:
            parse_bytes(text)
        except ValueError as exc:
            raise SweepValueError(f"kv_memory {text}: {exc}") from None
    for name, values in (("swa_full_tokens_ratio", swa), ("mamba_full_memory_ratio", mamba)):
        if any(v <= 0 for v in values or []):
            raise SweepValueError(f"{name}: expected ratios above 0, got {values}")
    return HybridAxes(tuple(dict.fromkeys(archs)), _given(kv), _given(swa), _given(mamba))


def _given(values: Sequence[T] | None) -> tuple[T | None, ...]:
    """An axis's values, each once, or ``(None,)`` (SGLang's default) when none was given."""
    return tuple(dict.fromkeys(values)) if values else (None,)


def read_hybrid_keys(data: Mapping[str, Any], where: str) -> dict[str, list[Any] | None]:
    """A grid file's hybrid keys as GridParts fields (None for a key it does not have)."""
    out: dict[str, list[Any] | None] = {}
    for key, field_name in zip(HYBRID_KEYS, ("model_archs", "kv_memories", "swa_ratios",
                                             "mamba_ratios"), strict=True):
        if key not in data:
            continue
        value = data[key]
        if key in ("model_arch", "kv_memory"):
            items = value if isinstance(value, list) else [value]
            if not items or not all(isinstance(i, str) and i.strip() for i in items):
                raise SweepValueError(f"{where} {key}: expected names like "
                                      f"{'gpt-oss-120b' if key == 'model_arch' else '40GiB'}, "
                                      f"got {value!r}")
            out[field_name] = [i.strip() for i in items]
        else:
            out[field_name] = [float(v) for v in parse_numbers(value, f"{where} {key}")]
    return out
