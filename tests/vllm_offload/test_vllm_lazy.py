"""radix-evict installs and works without vLLM: ``import radix_evict`` (and radix_evict.vllm)
never imports it, and ``radix-evict vllm check`` says vLLM is missing (exit 2)."""

from __future__ import annotations

import subprocess
import sys

import radix_evict

PROBE = """
import sys, importlib.util
assert importlib.util.find_spec("vllm") is None, "vllm is installed in this venv"
import radix_evict, radix_evict.vllm, radix_evict.vllm.check, radix_evict.vllm.launch
import radix_evict.vllm.replay, radix_evict.vllm.tree, radix_evict.cli
from radix_evict.vllm.tree import ChunkTree
from radix_evict import load_policy
t = ChunkTree(lambda: load_policy("lru"))
t.insert(b"k" * 12, None, None, pinned=False)
assert t.evict(1) is not None
print(sorted(m for m in sys.modules if m == "vllm" or m.startswith("vllm.")))
"""


def test_import_radix_evict_never_imports_vllm() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_check_says_vllm_is_missing() -> None:
    exe = [sys.executable, "-m", "radix_evict.cli", "vllm", "check", "--eviction-policy",
           "radix_evict_lru"]
    out = subprocess.run(exe, capture_output=True, text=True, check=False)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "vLLM: not importable here" in out.stdout and "vllm==0.33.0" in out.stdout


def test_building_a_class_needs_vllm() -> None:
    out = subprocess.run([sys.executable, "-c", "import radix_evict.vllm as m; m.radix_evict_lru"],
                         capture_output=True, text=True, check=False)
    assert out.returncode != 0 and "No module named 'vllm'" in out.stderr
    assert radix_evict.__version__


def test_vllm_is_imported_at_module_level_only_by_the_module_vllm_loads() -> None:
    """No module imports vLLM at the top; only ``policy_class`` loads ``cache_policy``, by name."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "core" / "vllm"
    eager, loads = [], []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(m.split(".")[0] == "vllm" for m in mods):
                eager.append(path.name)
            if any(m == "radix_evict.vllm.cache_policy" for m in mods):
                loads.append(path.name)
    assert eager == []
    assert loads == []
