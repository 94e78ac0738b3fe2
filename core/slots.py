"""How tree nodes hold their KV slot indices.

On a cpu pool the nodes keep numpy arrays: slicing, copying and joining them
costs a fraction of the same torch calls, and those calls sit on every
request's path. On any other device the nodes keep tensors on that device,
so ``match_prefix`` never copies indices between host and device. Only this
module knows which.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from radix_evict.pool import Allocator, KVPool

SlotArray = np.ndarray | torch.Tensor


def unchecked_release(pool: Allocator) -> Any:
    """``pool.release`` when calling it is indistinguishable from calling ``pool.free``.

    That holds for a :class:`KVPool` whose ``free`` nobody overrode: the
    release path does what ``free`` does minus the checks, which the tree's
    own invariants make redundant. Any other allocator, including a KVPool
    subclass that wraps ``free`` (to poison or count slots), sees every slot
    the cache lets go through its ``free``, as the API promises.
    """
    kind = type(pool)
    if isinstance(pool, KVPool) and kind.free is KVPool.free and kind.release is KVPool.release:
        return pool.release
    return None


class NumpySlots:
    """Slot storage for cpu pools."""

    def __init__(self, pool: Allocator) -> None:
        self._pool = pool
        self._release_np = unchecked_release(pool)  # takes numpy arrays directly
        self.empty = np.empty(0, dtype=np.int64)

    def take(self, indices: torch.Tensor, start: int, stop: int) -> np.ndarray:
        """A private copy of ``indices[start:stop]`` for a node to own."""
        return indices.numpy()[start:stop].copy()

    def to_tensor(self, values: list[Any]) -> torch.Tensor:
        """The concatenation of ``values`` as a new int64 tensor on the pool's device."""
        if len(values) == 1:
            return torch.from_numpy(values[0].copy())
        return torch.from_numpy(np.concatenate(values))

    def release(self, values: list[Any]) -> None:
        """Give slots the tree owned back to the pool."""
        arr = values[0] if len(values) == 1 else np.concatenate(values)
        if self._release_np is not None:
            self._release_np(arr)
        else:
            self._pool.free(torch.from_numpy(arr))


class TorchSlots:
    """Slot storage for pools on an accelerator (or any device)."""

    def __init__(self, pool: Allocator) -> None:
        self._pool = pool
        self._release = unchecked_release(pool) or pool.free
        self.empty = torch.empty(0, dtype=torch.int64, device=pool.device)

    def take(self, indices: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        return indices[start:stop].clone()

    def to_tensor(self, values: list[Any]) -> torch.Tensor:
        return values[0].clone() if len(values) == 1 else torch.cat(values)

    def release(self, values: list[Any]) -> None:
        self._release(values[0] if len(values) == 1 else torch.cat(values))


def slot_storage(pool: Allocator) -> NumpySlots | TorchSlots:
    """The storage that suits ``pool``'s device."""
    return NumpySlots(pool) if torch.device(pool.device).type == "cpu" else TorchSlots(pool)
