"""vLLM 0.33.0's CPU offload modules, importable on a CPU-only machine, for the integration tests.

`make vllm-env` unpacks vLLM's wheel under ``build/vllm-env/src`` and puts the small packages
the offload modules import (tests/vllm_env_requirements.txt) under ``build/vllm-env/site``.
:func:`import_vllm` wires that up once per process and returns the ``vllm`` package, or
skips the calling test with the command that builds the environment.

Only these run for real: ``vllm/v1/kv_offload/{base,config,factory}.py``, ``cpu/{common,
manager,spec}.py``, ``cpu/policies/*``, the logger and ``vllm.envs`` they import. What the
chain touches beyond them is GPU- or server-sized and is never called on this path:

- the ``__init__`` of ``vllm`` and of the ``vllm.distributed`` packages down to the offload
  connector (they import the whole engine, NCCL groups, ZMQ) do not run: bare packages;
- what stood for ``vllm`` before goes: SGLang's test stub (SGLang probes for vLLM);
- ``STUB_MODULES`` import as permissive stubs (``tests/helpers/sglang_env.py``'s stub
  type): ``vllm.config`` (type annotations only), the process groups, the connector
  factory, the platform probe, the GPU worker and the shared-memory region. Two facts stay
  real: this one process is the first rank (the logger's ``warning_once`` asks), and
  ``SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT`` is the OS page size (the spec reads it).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import mmap
import os
import sys
import types
from pathlib import Path

import pytest

from helpers.sglang_env import _StubModule

VLLM_VERSION = "0.33.0"
BUILD_COMMAND = "make vllm-env"
REPO_ROOT = Path(__file__).resolve().parents[2]
# RADIX_EVICT_VLLM_ENV points elsewhere (a shared checkout's build, for example).
ENV_DIR = Path(os.environ.get("RADIX_EVICT_VLLM_ENV", REPO_ROOT / "build" / "vllm-env"))
SRC_DIR = ENV_DIR / "src"
SITE_DIR = ENV_DIR / "site"

BARE_PACKAGES = (
    "vllm",
    "vllm.distributed",
    "vllm.distributed.kv_transfer",
    "vllm.distributed.kv_transfer.kv_connector",
    "vllm.distributed.kv_transfer.kv_connector.v1",
    "vllm.distributed.kv_transfer.kv_connector.v1.offloading",
)
STUB_MODULES = (
    "vllm.config",
    "vllm.distributed.parallel_state",
    "vllm.distributed.kv_transfer.kv_connector.factory",
    "vllm.platforms",
    "vllm.v1.kv_offload.cpu.gpu_worker",
    "vllm.v1.kv_offload.cpu.shared_offload_region",
)


def env_missing_reason() -> str | None:
    """Why the environment cannot be used, or None when it is built."""
    if not (SRC_DIR / "vllm" / "v1" / "kv_offload" / "cpu" / "manager.py").is_file():
        return f"vLLM {VLLM_VERSION} test environment not built at {ENV_DIR}"
    if not (SITE_DIR / "msgspec").is_dir():
        return f"vLLM test environment at {ENV_DIR} has no site/msgspec (an interrupted build)"
    return None


def import_vllm() -> types.ModuleType:
    """Make vLLM 0.33.0's offload modules importable (once) and return the ``vllm`` package.

    Skips the calling test, naming the build command, when the environment is missing.
    """
    reason = env_missing_reason()
    if reason is not None:
        pytest.skip(f"{reason}; run: {BUILD_COMMAND}")
    _install()
    return sys.modules["vllm"]


def _bare_package(name: str) -> types.ModuleType:
    path = SRC_DIR.joinpath(*name.split("."))
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(path)]
    module = types.ModuleType(name)
    module.__spec__ = spec
    module.__path__ = [str(path)]
    module.__file__ = str(path / "__init__.py")
    return module


def _take_vllm_back_from_sglangs_stubs() -> None:
    """Make ``vllm`` this environment's, whatever stood for it before.

    tests/helpers/sglang_env.py serves ``vllm`` as a stub when it is not installed (SGLang
    probes for it); it may not shadow vLLM's own code once this is loaded. (The tests'
    folder is ``tests/vllm_offload``: a ``tests/vllm`` would be a namespace package ``vllm``.)
    """
    for finder in sys.meta_path:
        roots = getattr(finder, "roots", None)
        if isinstance(roots, frozenset) and "vllm" in roots:
            finder.roots = roots - {"vllm"}  # type: ignore[attr-defined]
    src = str(SRC_DIR)
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        module = sys.modules[name]
        paths = [str(p) for p in getattr(module, "__path__", [])]
        where = getattr(module, "__file__", None) or (paths[0] if paths else "")
        if isinstance(module, _StubModule) or not str(where).startswith(src):
            del sys.modules[name]


def _install() -> None:
    if "vllm.v1.kv_offload.cpu.manager" in sys.modules:
        return
    src, site = str(SRC_DIR), str(SITE_DIR)
    if src not in sys.path:
        sys.path.insert(0, src)  # vLLM and its dist-info (importlib.metadata finds it)
    if site not in sys.path:
        sys.path.append(site)  # last: the venv's own packages win
    importlib.invalidate_caches()
    _take_vllm_back_from_sglangs_stubs()
    for name in BARE_PACKAGES:
        module = sys.modules.setdefault(name, _bare_package(name))
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    for name in STUB_MODULES:
        sys.modules.setdefault(name, _StubModule(name))
    groups = sys.modules["vllm.distributed.parallel_state"]
    groups.is_global_first_rank = groups.is_local_first_rank = lambda: True  # type: ignore[attr-defined]
    region = sys.modules["vllm.v1.kv_offload.cpu.shared_offload_region"]
    region.SharedOffloadRegion = type(  # type: ignore[attr-defined]
        "SharedOffloadRegion", (), {"BLOCK_SIZE_ALIGNMENT": mmap.PAGESIZE}
    )
    importlib.import_module("vllm.v1.kv_offload.cpu.manager")
