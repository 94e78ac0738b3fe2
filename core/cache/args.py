"""Argument checks, written once: a wrong type is a TypeError, a value out of range a ValueError.

The cache, the pool, the replay and the workloads all take counts and
numbers from callers; they check them here so that one input gets one
exception type and one message wherever it goes. Each check tests the
common case first and returns: these run on every request's path (the
module is compiled with the rest of the hot path).

A caller with its own error class (a workload's, naming its parameter)
passes it as ``type_error``/``value_error``; the rule stays the same.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
import torch

from radix_evict.cache.device import resolve_device


def is_integer(value: object) -> bool:
    """An int or numpy integer, not a bool (``True`` is not a count)."""
    return type(value) is int or (
        isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    )


def is_real(value: object) -> bool:
    """An int, float or numpy real scalar, not a bool."""
    return type(value) is float or is_integer(value) or isinstance(value, (float, np.floating))


def check_int(
    name: str,
    value: Any,
    low: int | None = None,
    *,
    type_error: type[Exception] = TypeError,
    value_error: type[Exception] = ValueError,
) -> int:
    """``value`` as an int (``>= low`` if given); floats and bools are errors, never rounded."""
    if type(value) is int and (low is None or value >= low):  # the common case, first
        return value
    if not is_integer(value):
        raise type_error(f"{name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise value_error(f"{name} must be >= {low}, got {value!r}")
    return int(value)


def check_number(
    name: str,
    value: Any,
    low: float | None = None,
    *,
    above: bool = False,
    high: float | None = None,
    type_error: type[Exception] = TypeError,
    value_error: type[Exception] = ValueError,
) -> float:
    """A finite real number, ``>= low`` (``> low`` with ``above``) and ``<= high`` if given."""
    if not is_real(value):
        raise type_error(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise value_error(f"{name} must be a finite number, got {value!r}")
    if low is not None and (x <= low if above else x < low):
        raise value_error(f"{name} must be {'>' if above else '>='} {low:g}, got {value!r}")
    if high is not None and x > high:
        raise value_error(f"{name} must be <= {high:g}, got {value!r}")
    return x


# Read once: a compiled module reads a Final from a C global, not through ``torch``'s dict.
_TENSOR: Final = torch.Tensor
_TORCH_INT64: Final = torch.int64
_INT64: Final = np.dtype(np.int64)  # numpy's shared descriptor: an identity test finds it
_NP_EMPTY: Final = np.empty
_FROM_NUMPY: Final = torch.from_numpy


class SlotDevice:
    """The device KV slots live on: the one check of a slot tensor, and the copies across.

    The device is resolved once (:func:`~radix_evict.cache.device.resolve_device`:
    ``"cuda"`` is ``cuda:0``, as the tensors report it). Whatever the device, the
    pool's bookkeeping (free list, owner tags, the tree's per-page entries) is
    numpy on the host, where each of the many small steps of a request costs
    a fraction of a kernel launch; only the slot tensors a caller is handed,
    and takes back, cross: :meth:`to_device` (one host-to-device copy, from
    pinned memory) and :meth:`host_array` (one copy back). The pool and the
    cache's slot storage share one instance.
    """

    def __init__(self, device: Any) -> None:
        self.device = resolve_device(device)
        self.on_cpu = self.device.type == "cpu"
        # Host buffers for what goes to a GPU are pinned, so the copy can run
        # asynchronously (torch keeps a pinned block until its copy has finished).
        self._pinned = self.device.type == "cuda"

    def empty(self, n: int) -> Any:
        """A new int64 host array of ``n`` items, for slots on their way to the device."""
        if self._pinned:
            return torch.empty(n, dtype=_TORCH_INT64, pin_memory=True).numpy()
        return _NP_EMPTY(n, _INT64)

    def to_device(self, values: Any) -> torch.Tensor:
        """``values`` (an int64 host array the caller gives away) as a tensor on the device."""
        if self.on_cpu:
            return _FROM_NUMPY(values)
        return _FROM_NUMPY(values).to(self.device, non_blocking=True)

    def check(self, what: str, slots: Any, length: int = -1) -> None:
        """Raise unless ``slots`` is a 1-D integer tensor here (of ``length`` items if >= 0).

        ``what`` names the argument in the error, e.g. ``"indices"`` or
        ``"KVPool.free: slots"``.
        """
        if (  # the usual case in one test; is_cpu is an attribute read, a device compare is not
            type(slots) is _TENSOR
            and slots.dtype is _TORCH_INT64
            and slots.dim() == 1
            and (length < 0 or slots.shape[0] == length)
            and (slots.is_cpu if self.on_cpu else slots.device == self.device)
        ):
            return
        if not isinstance(slots, torch.Tensor):
            kind = type(slots).__name__
            raise TypeError(f"{what} must be a torch tensor of KV slots, got {kind}")
        if slots.dtype == torch.bool or slots.dtype.is_floating_point or slots.is_complex():
            raise TypeError(f"{what} must be integer KV slots, got dtype {slots.dtype}")
        if slots.dim() != 1:
            raise ValueError(f"{what} must be 1-D, got shape {tuple(slots.shape)}")
        if slots.device != self.device:
            raise ValueError(f"{what} are on {slots.device} but the pool is on {self.device}")
        if length >= 0 and slots.shape[0] != length:
            raise ValueError(
                f"tokens and {what} differ in length ({length} != {slots.shape[0]}): "
                "one KV slot per token"
            )

    def host_array(self, what: str, slots: Any, length: int = -1) -> Any:
        """``check``, and the int64 numpy array of ``slots`` the pool computes with.

        On cpu the usual case is one ``Tensor.numpy()`` call and numpy's cheap
        attribute reads, where ``check`` and a conversion after it would make
        five calls into torch on every request's path. Any other input goes
        through ``check`` and its messages; integer slots of another width are
        widened to int64, which the pool's loops take.
        """
        if self.on_cpu and type(slots) is _TENSOR:
            try:
                arr = slots.numpy()
            except Exception:  # (another device, or no numpy view): check says what is wrong
                arr = None
            if (
                arr is not None
                and arr.dtype is _INT64
                and arr.ndim == 1
                and (length < 0 or len(arr) == length)
            ):
                return arr
        self.check(what, slots, length)
        arr = slots.numpy() if self.on_cpu else slots.cpu().numpy()  # off cpu: one copy back
        return arr if arr.dtype is _INT64 else arr.astype(np.int64)

    def __repr__(self) -> str:
        return f"SlotDevice({str(self.device)!r})"
