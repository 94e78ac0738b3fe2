"""The device rule, written once: what device a pool, cache, engine or command means.

torch names one GPU several ways (``"cuda"``, ``"cuda:0"``, ``torch.device("cuda",
0)``, the current device), but a tensor always reports the concrete one
(``cuda:0``), so comparing a tensor's device with the name a caller gave
refuses the pool's own slots. Everything that takes a device resolves it here
once, and every comparison uses the resolved form.

torch's CUDA queries are read at call time (``torch.cuda.is_available()``,
``device_count()``, ``current_device()``), so tests can stand in for a GPU.
"""

from __future__ import annotations

from typing import Final

import torch

__all__ = ["AUTO", "DeviceError", "DeviceSpec", "describe_choices", "resolve_device"]

AUTO: Final = "auto"
DeviceSpec = str | torch.device | int | None


class DeviceError(ValueError):
    """A device that does not exist here (no GPU, or no such GPU), or a malformed name."""


def describe_choices() -> str:
    """What ``--device`` accepts, for help texts and errors."""
    return "auto, cpu, cuda or cuda:N"


def resolve_device(device: DeviceSpec, what: str = "device") -> torch.device:
    """The concrete device ``device`` names: ``cpu`` or ``cuda:N``.

    ``None`` and ``"auto"`` mean the current GPU when one is present, else
    cpu. ``"cuda"`` (no index) is the current GPU. Raises :class:`DeviceError`
    naming ``what`` and the value for a malformed name, for cuda without a
    GPU, and for a GPU index past the last one. Other backends (``meta``,
    ``mps``) are returned as torch parses them.
    """
    if device is None or device == AUTO:
        return _current_cuda() if torch.cuda.is_available() else torch.device("cpu")
    if isinstance(device, bool) or not isinstance(device, (str, torch.device, int)):
        raise DeviceError(
            f"{what} must be a device name ({describe_choices()}) or a torch.device, "
            f"got {device!r}"
        )
    try:
        if isinstance(device, int):  # a bare index names a GPU, as in torch.cuda APIs
            parsed = torch.device("cuda", device)
        else:
            parsed = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise DeviceError(
            f"{what} {device!r} is not a device name: use {describe_choices()}"
        ) from exc
    if parsed.type == "cpu":
        return torch.device("cpu")  # "cpu:0" too: cpu tensors report plain "cpu"
    if parsed.type != "cuda":
        return parsed
    if not torch.cuda.is_available():
        raise DeviceError(f"{what} {str(device)!r}: no CUDA device is available (use cpu)")
    if parsed.index is None:
        return _current_cuda()
    count = torch.cuda.device_count()
    if parsed.index >= count:
        have = (
            "1 CUDA device (cuda:0)"
            if count == 1
            else f"{count} CUDA devices (cuda:0..cuda:{count - 1})"
        )
        raise DeviceError(f"{what} {str(device)!r}: this machine has {have}")
    return torch.device("cuda", parsed.index)


def _current_cuda() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())
