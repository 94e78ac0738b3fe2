"""The compiled and the interpreted build raise the same exceptions with the same messages.

Whichever build is installed runs here; ``RADIX_EVICT_PURE_PYTHON=1`` makes a
subprocess import the interpreted modules even where compiled ones are
installed, so a compiled install (what ``make install`` builds by default)
checks both builds in one test run. On an interpreted install the
comparison has nothing to compare against and is skipped; the cases still
run and must raise their documented types.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_parity_cases import CASES, outcomes

from radix_evict.cache import compiled

HERE = Path(__file__).resolve().parent
COMPILED = bool(compiled.compiled_modules())
NOT_COMPILED = "no compiled build here (RADIX_EVICT_COMPILE=1 pip install -e . builds one)"


def interpreted(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, compiled.PURE_ENV: "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=HERE, env=env, capture_output=True, text=True, timeout=600
    )


def test_each_misuse_raises_its_documented_type() -> None:
    got = outcomes()
    wrong = {name: got[name] for name, (_, want) in CASES.items() if got[name][0] != want}
    assert not wrong, f"cases raising something else: {wrong}"


def test_the_switch_imports_the_interpreted_modules() -> None:
    r = interpreted(
        "-c",
        "import radix_evict.cache.radix_cache as m, radix_evict.cache.compiled as c; "
        "print(m.__file__); print(c.describe())",
    )
    assert r.returncode == 0, r.stderr
    path, describe = r.stdout.split("\n")[:2]
    assert path.endswith("radix_cache.py") and describe.startswith("pure Python")


@pytest.mark.skipif(not COMPILED, reason=NOT_COMPILED)
def test_compiled_and_interpreted_builds_raise_alike() -> None:
    r = interpreted("build_parity_cases.py")
    assert r.returncode == 0, r.stderr
    pure = json.loads(r.stdout)
    here = outcomes()
    differ = {k: {"compiled": here[k], "interpreted": pure[k]} for k in here if here[k] != pure[k]}
    assert not differ, json.dumps(differ, indent=1)


@pytest.mark.skipif(not COMPILED, reason=NOT_COMPILED)
def test_the_cache_tests_pass_on_the_interpreted_build_too() -> None:
    files = ["test_refused_calls.py", "../policies/test_policy_faults.py", "test_semantics.py",
             "test_pool.py"]
    r = interpreted("-m", "pytest", "-q", "-p", "no:cacheprovider", *files)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
