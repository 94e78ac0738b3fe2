"""Every README example that can run offline here runs, as written or with smaller inputs.

The fenced ``bash`` and ``python`` blocks are read from README.md. The python
blocks run in order in one interpreter (each continues the one before, as a
reader's session would). Each bash command runs from a folder shaped like
the checkout (``.venv``, ``docs`` and ``../shared`` linked), so the files it
writes land in a temp folder. A command is either run, run with smaller
inputs (:data:`SMALLER`: same flags, fewer requests or cells), or skipped for
a reason listed in :data:`SKIP`; a command the README grows that neither
table knows is run as written.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SHARED = ROOT.parent / "shared"

# A command starting with this -> why it does not run here.
SKIP = {
    "make simulate": "sets up .venv with pip (network, minutes); the suite's venv is that one",
    "make test": "runs this test suite and more (minutes)",
    "make install": "installs into .venv with pip (network)",
    ".venv/bin/python bench/gpu_check.py": "needs a GPU",
    "bash ../shared/peer/setup.sh": "downloads SGLang and builds a 1.2 GB venv (network)",
    "../peer-env/venv/bin/python -m pip": "pip install into ../peer-env (network)",
    ".venv/bin/python bench/bench_vs_sglang.py": "needs ../peer-env and runs for minutes",
}

# A python block containing this -> why it does not run here.
SKIP_PYTHON = {
    'device="cuda:0"': "needs a GPU",
}

# (a part of the command, what it becomes): the same command with fewer requests or cells.
SMALLER = [
    ("limit=4000", "limit=300"),  # the timed replay
    ("--pool-tokens 1M..16M*2", "--pool-tokens 1M..2M*2 --param limit=200"),  # the sweep
    ("--page-size 512", "--page-size 512 --param limit=300"),  # a whole trace
]

# Commands that fail on purpose: the first characters -> the exit code they show.
EXPECTED_EXIT = {
    ".venv/bin/radix-evict validate": 1,  # the example is a typo, to show the message
}


def _blocks(lang: str) -> list[tuple[int, str]]:
    """(line, text) of each ```lang fenced block of the README."""
    text = README.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(rf"^```{lang}\n(.*?)^```$", text, re.S | re.M):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


def _commands() -> list[tuple[int, str]]:
    """(line, command) of each command of the README's bash blocks, continuations joined,
    comments dropped."""
    out = []
    for line, block in _blocks("bash"):
        start, parts = 0, []
        for i, text in enumerate(block.splitlines()):
            start = start if parts else line + 1 + i
            parts.append(text.rstrip().removesuffix("\\").strip())
            if text.rstrip().endswith("\\"):
                continue
            words = shlex.split(" ".join(parts), comments=True)
            parts = []
            if words:
                out.append((start, shlex.join(words)))
    return out


def _skip_reason(cmd: str) -> str | None:
    return next((why for start, why in SKIP.items() if cmd.startswith(start)), None)


def _smaller(cmd: str) -> list[str]:
    """The command's words, with the first :data:`SMALLER` rule that applies applied."""
    words = shlex.split(cmd)
    text = " ".join(words)
    for part, smaller in SMALLER:
        if part in text:
            at = text.index(part)
            words = shlex.split(text[:at]) + smaller.split() + shlex.split(text[at + len(part):])
            break
    return words


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder that looks like the checkout to a command (and its ../shared)."""
    top = tmp_path_factory.mktemp("readme")
    (top / "shared").symlink_to(SHARED)
    here = top / "main"
    here.mkdir()
    for name in (".venv", "docs"):
        (here / name).symlink_to(ROOT / name)
    return here


def test_every_readme_command_is_known_or_runs() -> None:
    commands = [cmd for _, cmd in _commands()]
    assert any(c.startswith(".venv/bin/radix-evict lint docs/examples/") for c in commands)
    assert len(commands) >= 10, commands
    for start in [*SKIP, *EXPECTED_EXIT]:
        assert any(c.startswith(start) for c in commands), f"{start!r} left the README"


@pytest.mark.skipif(not SHARED.joinpath("traces").is_dir(), reason="no ../shared/traces")
@pytest.mark.parametrize(("line", "cmd"), _commands(), ids=[f"L{n}" for n, _ in _commands()])
def test_readme_command_runs(checkout: Path, line: int, cmd: str) -> None:
    why = _skip_reason(cmd)
    if why is not None:
        pytest.skip(f"README line {line}: {why}")
    expected = next((rc for start, rc in EXPECTED_EXIT.items() if cmd.startswith(start)), 0)
    env = {**os.environ, "MPLBACKEND": "Agg", "COLUMNS": "200"}
    r = subprocess.run(_smaller(cmd), cwd=checkout, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == expected, f"README line {line}: {cmd}\n{r.stdout[-3000:]}\n" \
                                     f"{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr


def test_readme_python_runs_in_order(tmp_path: Path) -> None:
    blocks = []
    for line, code in _blocks("python"):
        if any(marker in code for marker in SKIP_PYTHON):
            continue
        blocks.append(f"# README line {line}\n{code}")
    assert len(blocks) >= 3
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["368"]  # the cached prefix: whole pages of 380 tokens


def test_the_page_rule_is_what_the_readme_says() -> None:
    from radix_evict import KVPool

    pool = KVPool(size=1024, page_size=16, device="cpu")
    with pytest.raises(ValueError, match="multiple of page_size"):
        pool.alloc(380)
    assert pool.alloc(384) is not None
