"""SGLang 0.5.23's own code, importable on a CPU-only machine, for the integration tests.

`make sglang-env` unpacks SGLang's wheel under ``build/sglang-env/src`` and puts the few
small packages its radix-cache import chain needs under ``build/sglang-env/site``.
SGLang's GPU, model and media dependencies are not installed; the modules this chain only
imports (never calls) are served as permissive stubs. :func:`import_sglang` wires that up
once per process and returns the ``sglang`` package, or skips the calling test with the
command that builds the environment.

What the stubs change in the process (only once ``import_sglang`` ran):
- a top-level module in ``STUB_ROOTS`` that is not installed imports as a stub (an
  installed one, such as matplotlib's PIL, stays real); a stub module is falsy, so code
  that asks ``if sys.modules.get("IPython"):`` (matplotlib) still sees it as absent;
- ``regex`` is the stdlib ``re`` when it is not installed;
- ``torch.compile`` is a no-op: compiling at import time would reach the triton stub;
- ``sglang/__init__.py`` (the frontend API) does not run; ``sglang`` is a bare package.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

SGLANG_VERSION = "0.5.23"
BUILD_COMMAND = "make sglang-env"
REPO_ROOT = Path(__file__).resolve().parents[2]
# RADIX_EVICT_SGLANG_ENV points elsewhere (a shared checkout's build, for example).
ENV_DIR = Path(os.environ.get("RADIX_EVICT_SGLANG_ENV", REPO_ROOT / "build" / "sglang-env"))
SRC_DIR = ENV_DIR / "src"
SITE_DIR = ENV_DIR / "site"

# Top-level packages SGLang's tree, registry, argument and plugin modules import at module
# level but never call on this path (GPU kernels, model hubs, tokenizers, media, servers).
STUB_ROOTS = frozenset(
    {
        "IPython", "PIL", "aiohttp", "anthropic", "av", "blobfile", "compressed_tensors",
        "cuda", "cuda_python", "cutlass", "datasets", "decord", "deep_ep", "deep_gemm",
        "einops", "fastapi", "flash_attn", "flashinfer", "gguf", "huggingface_hub",
        "interegular", "kernels", "llguidance", "mistral_common", "modelscope", "mooncake",
        "numba", "nixl", "nvidia", "openai", "outlines", "partial_json_parser", "py_spy",
        "pybase64", "pynvml", "quack", "safetensors", "scipy", "sentencepiece",
        "setproctitle", "sgl_kernel", "sglang_kernel", "soundfile", "tiktoken", "tilelang",
        "timm", "tokenizers", "torch_memory_saver", "torchaudio", "torchvision",
        "transformers", "triton", "tvm_ffi", "uvicorn", "uvloop", "vllm", "xgrammar",
        "zstandard",
    }
)  # fmt: skip


def env_missing_reason() -> str | None:
    """Why the environment cannot be used, or None when it is built."""
    if not (SRC_DIR / "sglang" / "srt" / "mem_cache" / "radix_cache.py").is_file():
        return f"SGLang {SGLANG_VERSION} test environment not built at {ENV_DIR}"
    if not SITE_DIR.is_dir():
        return f"SGLang test environment at {ENV_DIR} has no site/ (an interrupted build)"
    return None


def import_sglang() -> types.ModuleType:
    """Make SGLang 0.5.23 importable (stubs installed once) and return the ``sglang`` package.

    Skips the calling test, naming the build command, when the environment is missing.
    """
    reason = env_missing_reason()
    if reason is not None:
        pytest.skip(f"{reason}; run: {BUILD_COMMAND}")
    _install()
    return sys.modules["sglang"]


# --------------------------------------------------------------------------- the stubs
class _StubType(type):
    """A class standing for any attribute of a stubbed module: it absorbs every use.

    Attribute access yields another stub class, calling it as a decorator hands the
    decorated object back, and it is falsy, empty and unordered, so ``if triton:`` or
    ``x in stub`` take the "not available" branch.
    """

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        sub = _StubType(name, (_Stub,), {"__module__": cls.__module__})
        setattr(cls, name, sub)
        return sub

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return cls

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __setitem__(cls, item: Any, value: Any) -> None:
        pass

    def __or__(cls, other: Any) -> Any:
        return cls

    __ror__ = __or__

    def __bool__(cls) -> bool:
        return False

    def __len__(cls) -> int:
        return 0

    def __iter__(cls) -> Any:
        return iter(())

    def __contains__(cls, item: Any) -> bool:
        return False

    def __lt__(cls, other: Any) -> bool:  # version checks (stub >= (1, 2)) say "no"
        return False

    __le__ = __gt__ = __ge__ = __lt__


class _Stub(metaclass=_StubType):
    def __init_subclass__(cls, **kwargs: Any) -> None:  # class X(stub.Base, flag=...) works
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.any_schema()


class _StubModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: submodules import as stubs too
        self.__version__ = "0.0.0"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        sub = _StubType(name, (_Stub,), {"__module__": self.__name__})
        setattr(self, name, sub)
        return sub

    def __bool__(self) -> bool:
        # Falsy, so ``if sys.modules.get("IPython"):`` elsewhere (matplotlib) reads "absent".
        return False


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StubModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    """Serves stubs for the given roots (and everything under them)."""

    def __init__(self, roots: frozenset[str]) -> None:
        self.roots = roots

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.partition(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


def _install() -> None:
    if any(isinstance(f, _StubFinder) for f in sys.meta_path):
        return
    src, site = str(SRC_DIR), str(SITE_DIR)
    if src not in sys.path:
        sys.path.insert(0, src)  # SGLang and its dist-info (importlib.metadata finds it)
    if site not in sys.path:
        sys.path.append(site)  # last: the venv's own packages win
    importlib.invalidate_caches()
    missing = frozenset(r for r in STUB_ROOTS if importlib.util.find_spec(r) is None)
    sys.meta_path.insert(0, _StubFinder(missing))
    if importlib.util.find_spec("regex") is None:
        import re

        sys.modules["regex"] = re  # SGLang only compiles patterns with it

    import torch

    def no_compile(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda fn: fn

    torch.compile = no_compile  # type: ignore[assignment]

    if "sglang" not in sys.modules:
        pkg = SRC_DIR / "sglang"
        spec = importlib.machinery.ModuleSpec("sglang", None, is_package=True)
        spec.submodule_search_locations = [str(pkg)]
        root = types.ModuleType("sglang")
        root.__spec__ = spec
        root.__path__ = [str(pkg)]
        root.__file__ = str(pkg / "__init__.py")
        sys.modules["sglang"] = root
