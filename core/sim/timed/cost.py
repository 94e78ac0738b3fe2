"""How long a server step takes: the timed replay's cost model, its presets and its files.

A prefill batch costs a fixed launch overhead, a per-token term (the
weights' matmuls), an attention term (a new token at position ``c + j``
attends to ``c + j`` earlier tokens, so a request with ``c`` cached and ``u``
uncached tokens reads ``u * c + u * (u + 1) / 2`` (token, context) pairs) and
a term per cached token (its KV fetched once for the batch; 0 where the
attention term already covers it, as on a GPU with fused attention). A
decode step costs an overhead, a per-request term and a term per context
token read (the KV of every running request). Millisecond coefficients; the
attention and context terms per million pairs and per thousand tokens, so
the numbers in a file stay readable.

A model is a TOML or JSON file with the keys of :class:`CostModel` (unknown
keys are errors that name the key); presets are such files inside the
package (``radix_evict/sim/timed/presets``), each with its source written in it.
Every coefficient is a real number (a string ``"1"`` or ``true`` is refused,
not coerced), finite and at most :data:`MAX_MS`: a step's time is a sum of
coefficients times token counts, and a bounded coefficient keeps every such
sum finite, so a model that validates cannot overflow the replay's clock.
"""

from __future__ import annotations

import json
import math
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from radix_evict.errors import RadixEvictError
from radix_evict.inputs import CONFIG_BYTES, InputFileError, read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "DEFAULT_COST_MODEL",
    "CostModel",
    "CostModelError",
    "DecodeCost",
    "PrefillCost",
    "TransferCost",
    "attention_pairs",
    "load_cost_model",
    "preset_names",
]

DEFAULT_COST_MODEL = "llama3-8b-h100"
_PRESETS = "presets"
# The largest coefficient (ms per unit, about 17 minutes): times a token count (< 2^63) it
# stays far below float's range, so no step time a valid model gives overflows.
MAX_MS = 1e6
MAX_KV_BYTES_PER_TOKEN = 1 << 30  # 1 GiB a token: past any model's KV
MIN_HOST_GBPS = 1e-6  # 1 kB/s: slower copies would make a step's time overflow instead
MAX_HOST_GBPS = 1e6


class CostModelError(RadixEvictError, ValueError):
    """A cost model that cannot be used: unknown preset, unreadable file, bad key or value."""


class _Strict(BaseModel):
    """Unknown keys refused, values not coerced (``"1"``, ``true``), every number finite."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class PrefillCost(_Strict):
    """One prefill batch: ``base_ms + per_token_ms * new + per_mpair_ms * pairs / 1e6
    + per_cached_ktoken_ms * cached / 1e3``."""

    base_ms: float = Field(ge=0, le=MAX_MS,
                           description="fixed cost of a prefill batch (launch, sampling)")
    per_token_ms: float = Field(ge=0, le=MAX_MS, description="per uncached (prefilled) token")
    per_mpair_ms: float = Field(
        0.0, ge=0, le=MAX_MS, description="per million (new token, earlier token) attention pairs")
    per_cached_ktoken_ms: float = Field(
        0.0, ge=0, le=MAX_MS,
        description="per thousand cached tokens the batch's requests start from")


class DecodeCost(_Strict):
    """One decode step: ``base_ms + per_request_ms * batch + per_ktoken_ms * context / 1e3``."""

    base_ms: float = Field(ge=0, le=MAX_MS,
                           description="fixed cost of a decode step (weights read once)")
    per_request_ms: float = Field(ge=0, le=MAX_MS, description="per running request in the batch")
    per_ktoken_ms: float = Field(
        0.0, ge=0, le=MAX_MS,
        description="per thousand context tokens read (all running requests)")


class TransferCost(_Strict):
    """Copies between device and host memory (a host tier's writes and load-backs)."""

    kv_bytes_per_token: int = Field(
        gt=0, le=MAX_KV_BYTES_PER_TOKEN,
        description="KV bytes of one token, all layers, K and V (SGLang's host pool size "
                    "per token)")
    host_gbps: float = Field(ge=MIN_HOST_GBPS, le=MAX_HOST_GBPS,
                             description="device <-> host copy bandwidth, GB/s (1e9 B)")


class CostModel(_Strict):
    """Step times of one model on one machine; ``source`` says where the numbers come from."""

    name: str = "custom"
    source: str = ""
    prefill: PrefillCost
    decode: DecodeCost
    transfer: TransferCost | None = None

    def transfer_ms(self, tokens: int) -> float:
        """Copying ``tokens`` tokens' KV between device and host (needs a [transfer] table)."""
        t = self.transfer
        if t is None:
            raise CostModelError(
                f"cost model {self.name!r} has no [transfer] table (kv_bytes_per_token, "
                "host_gbps): a timed replay with a host tier needs one")
        return tokens * t.kv_bytes_per_token / (t.host_gbps * 1e9) * 1e3

    def prefill_ms(self, new: int, pairs: float, cached: int = 0) -> float:
        """A prefill batch of ``new`` tokens in all making ``pairs`` attention pairs in all,
        its requests starting from ``cached`` tokens in all."""
        p = self.prefill
        return (p.base_ms + p.per_token_ms * new + p.per_mpair_ms * pairs * 1e-6
                + p.per_cached_ktoken_ms * cached * 1e-3)

    def decode_ms(self, batch: int, context: int, steps: int = 1) -> float:
        """``steps`` decode steps of ``batch`` requests reading ``context`` tokens at the first.

        Each step adds one token per request, so step ``j`` reads
        ``context + j * batch`` tokens: the sum is closed-form, which lets the
        replay jump over many steps at once and stay exact.
        """
        d = self.decode
        per_step = d.base_ms + d.per_request_ms * batch + d.per_ktoken_ms * context * 1e-3
        growth = d.per_ktoken_ms * batch * 1e-3 * steps * (steps - 1) / 2
        return per_step * steps + growth

    def decode_steps_before(self, batch: int, context: int, budget_ms: float,
                            cap: int) -> int:
        """The fewest steps (1..``cap``) whose total time reaches ``budget_ms``; ``cap`` if
        even ``cap`` steps fall short.

        The closed-form root is checked on the exact sum; where float rounding
        puts it off, a bisection over ``1..cap`` settles it, so the answer costs
        O(log cap) sums whatever the budget (a budget of 1e45 ms, or a step
        too small to move a huge clock, was once stepped one count at a time).
        """
        if budget_ms <= 0 or cap <= 1:
            return 1
        total = self.decode_ms
        d = self.decode
        a = d.per_ktoken_ms * batch * 1e-3 / 2  # k^2 coefficient
        b = d.base_ms + d.per_request_ms * batch + d.per_ktoken_ms * context * 1e-3 - a
        if a > 0:
            k = (-b + math.sqrt(b * b + 4 * a * budget_ms)) / (2 * a)
        elif b > 0:
            k = budget_ms / b
        else:
            return 1
        if not k < cap:  # inf or NaN included
            if total(batch, context, cap) < budget_ms:
                return cap
            guess = cap
        else:
            guess = max(1, math.ceil(k - 1e-9))
        if total(batch, context, guess) >= budget_ms and (
                guess == 1 or total(batch, context, guess - 1) < budget_ms):
            return guess
        lo, hi = 1, cap  # the answer lies in lo..hi (hi itself when even cap falls short)
        while lo < hi:
            mid = (lo + hi) // 2
            if total(batch, context, mid) >= budget_ms:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def describe(self) -> dict[str, Any]:
        return self.model_dump()


def attention_pairs(cached: int, new: int) -> int:
    """(new token, earlier token) pairs when ``new`` tokens follow ``cached`` ones."""
    return new * cached + new * (new + 1) // 2


def preset_names() -> list[str]:
    """The presets shipped with radix-evict."""
    root = resources.files(__package__).joinpath(_PRESETS)
    return sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml"))


def _parse(text: str, where: str, suffix: str) -> dict[str, Any]:
    try:
        data: Any = json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CostModelError(f"cost model {where}: not valid {suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise CostModelError(
            f"cost model {where}: expected a table of keys, got {type(data).__name__}")
    return data


def from_mapping(data: dict[str, Any], where: str) -> CostModel:
    """A validated model; an error names the key (``prefill.per_token_ms``) and what is wrong."""
    try:
        return CostModel.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg'].lower()}"
            for e in exc.errors()
        )
        raise CostModelError(
            f"cost model {where}: {problems} (keys: name, source, prefill.base_ms, "
            "prefill.per_token_ms, prefill.per_mpair_ms, prefill.per_cached_ktoken_ms, "
            "decode.base_ms, decode.per_request_ms, decode.per_ktoken_ms, "
            "transfer.kv_bytes_per_token, transfer.host_gbps)"
        ) from None


def load_cost_model(name_or_path: str | Path | CostModel) -> CostModel:
    """A preset by name, or a ``.toml`` / ``.json`` file; a CostModel is returned as is."""
    if isinstance(name_or_path, CostModel):
        return name_or_path
    spec = str(name_or_path)
    if spec in preset_names():
        text = resources.files(__package__).joinpath(_PRESETS, f"{spec}.toml").read_text()
        return from_mapping(_parse(text, spec, ".toml"), f"preset {spec!r}")
    path = Path(spec)
    if path.suffix not in (".toml", ".json"):
        raise CostModelError(
            f"cost model {spec!r}: not a preset ({', '.join(preset_names())}) and not a "
            ".toml or .json file")
    try:  # a regular file within the config cap (a FIFO or /dev/zero is refused), BOM dropped
        text = read_text(path, limit=CONFIG_BYTES, what="a cost model")
    except InputFileError as exc:
        raise CostModelError(f"cost model {exc}") from None
    return from_mapping(_parse(text, spec, path.suffix), spec)
