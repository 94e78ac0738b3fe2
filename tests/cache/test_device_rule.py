"""The device rule: every spelling of a device resolves to the form tensors report.

No GPU is needed: torch's CUDA queries are stood in for (the rule reads them
at call time), which is how a regression of the rule fails on CPU-only CI.
"""

from __future__ import annotations

import pytest
import torch

from radix_evict import KVPool
from radix_evict.cache.args import SlotDevice
from radix_evict.cache.device import DeviceError, resolve_device


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for a machine with two GPUs whose current device is cuda:1."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.usefixtures("two_gpus")
@pytest.mark.parametrize(
    ("given", "resolved"),
    [
        ("cuda", "cuda:1"),  # the current device, with its index
        ("cuda:0", "cuda:0"),
        (torch.device("cuda"), "cuda:1"),
        (torch.device("cuda", 0), "cuda:0"),
        (0, "cuda:0"),  # torch reads a bare index as a GPU
        (None, "cuda:1"),
        ("auto", "cuda:1"),
        ("cpu", "cpu"),
        ("cpu:0", "cpu"),  # cpu tensors report plain "cpu"
    ],
)
def test_every_spelling_resolves_to_the_device_tensors_report(given: object, resolved: str) -> None:
    assert resolve_device(given) == torch.device(resolved)  # type: ignore[arg-type]
    assert str(resolve_device(given)) == resolved  # type: ignore[arg-type]


@pytest.mark.usefixtures("two_gpus")
def test_a_gpu_index_past_the_last_is_refused_naming_what_there_is() -> None:
    with pytest.raises(DeviceError, match=r"--device 'cuda:2': this machine has 2 CUDA devices"):
        resolve_device("cuda:2", "--device")


@pytest.mark.usefixtures("no_gpu")
@pytest.mark.parametrize("given", ["cuda", "cuda:0", torch.device("cuda", 0)])
def test_cuda_without_a_gpu_is_refused(given: object) -> None:
    with pytest.raises(DeviceError, match="no CUDA device is available"):
        resolve_device(given)  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_gpu")
def test_auto_without_a_gpu_is_the_cpu() -> None:
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert KVPool(size=8).device == torch.device("cpu")


@pytest.mark.parametrize("given", ["gpu", "cuda:x", "", True, 1.5, [0]])
def test_a_malformed_device_is_refused_naming_it(given: object) -> None:
    with pytest.raises(DeviceError, match="device"):
        resolve_device(given)  # type: ignore[arg-type]


@pytest.mark.usefixtures("two_gpus")
def test_a_pool_named_cuda_takes_its_own_slots_and_names_both_devices_otherwise() -> None:
    """The bug of issue #35: a pool on "cuda" refused the cuda:0 tensors it handed out."""
    pool = KVPool(size=8, device="cuda")  # index-only: nothing is allocated on the device
    assert pool.device == torch.device("cuda", 1)
    own = torch.empty(2, dtype=torch.int64, device="meta")
    with pytest.raises(ValueError, match=r"are on meta but the pool is on cuda:1"):
        pool.free(own)
    with pytest.raises(ValueError, match=r"are on cpu but the pool is on cuda:1"):
        pool.free(torch.tensor([0, 1]))
    device = SlotDevice("cuda:1")
    assert device.device == torch.device("cuda", 1) and not device.on_cpu


def test_the_cli_takes_cuda_n_and_says_no_gpu_as_a_usage_error(
    cli: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for spelling in ("cuda", "cuda:0", "cuda:3"):
        r = cli("simulate", "--model", "tiny", "--device", spelling, "-p", "lru")  # type: ignore[operator]
        assert r.exit_code == 2, r.output
        assert f"--device '{spelling}': no CUDA device is available" in r.output
        assert "internal error" not in r.output
    r = cli("simulate", "--model", "tiny", "--device", "gpu", "-p", "lru")  # type: ignore[operator]
    assert r.exit_code == 2 and "use auto, cpu, cuda or cuda:N" in r.output


def _off_cpu_twin(size: int, page_size: int) -> KVPool:
    """A cpu pool driven down the path a GPU pool takes: slots copied across, both ways.

    Its SlotDevice believes the KV is elsewhere, so every slot handed out goes
    through ``to_device`` and every slot taken back through ``host_array``'s
    ``.cpu()``: the branches a cuda pool runs (on cpu the moves are no-ops).
    """
    pool = KVPool(size=size, page_size=page_size, device="cpu")
    pool.slot_device.on_cpu = False  # what a cache built on it reads
    pool._on_cpu = False  # the pool's own copy of the flag
    return pool


@pytest.mark.parametrize("page_size", [1, 4, 16])
@pytest.mark.parametrize("policy", ["lru", "lfu", "slru"])
def test_the_off_cpu_path_decides_as_the_cpu_pool(page_size: int, policy: str) -> None:
    from helpers.device_stream import replay

    size = 1024 * page_size // 4
    plain = replay(KVPool(size=size, page_size=page_size, device="cpu"), policy)
    assert plain == replay(_off_cpu_twin(size, page_size), policy)
    assert any(step[2] for step in plain[:-1]), "the stream must evict to test anything"


@pytest.mark.parametrize("write_policy", ["write_through", "write_back"])
def test_the_off_cpu_path_with_a_host_tier_decides_as_the_cpu_pool(write_policy: str) -> None:
    from helpers.device_stream import replay

    from radix_evict import HostTierSpec

    host = HostTierSpec(ratio=2.0, write_policy=write_policy)
    plain = replay(KVPool(size=4096, page_size=16, device="cpu"), "lru", host=host)
    assert any(step[0] == "loaded" for step in plain), "the stream must load back"
    assert plain == replay(_off_cpu_twin(4096, 16), "lru", host=host)
