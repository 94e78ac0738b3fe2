"""``radix-evict lint`` over a generated folder of 1,000 manifests: wall time, per file.

Writes a folder of launch configs in the shapes deployments use (Kubernetes
Deployments with ``command``/``args``, StatefulSets with a ``bash -c`` block,
compose files, Helm values, SGLang ``--config`` files, shell scripts,
Dockerfiles; a tenth of them with an eviction mistake), then times the CLI
on the whole folder in a fresh process (imports included, as CI runs it) and
the in-process ``radix_evict.lint.lint_paths`` call; then lints hostile inputs one by one
(100,000-level nesting, a self-referencing alias, a 9-level billion laughs,
5 MB and 50 MB YAML, /dev/zero, a FIFO). A benchmark, not a test: the figures
are for the record.

    .venv/bin/python bench/bench_lint.py [--files 1000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICIES = [("slru", '{"protected_threshold": 4}'), ("lfu", None), ("priority", None),
            ("tlru", '{"threshold": 4096, "next_prompt_estimate": 512}'), ("lru", "{}")]
MISTAKES = [("slru", '{"protected_treshold": 4}'), ("lfuu", None),
            ("tlru", '{"threshold": 100, "next_prompt_estimate": 512}'), ("priority", '{"x": 1}')]


def _flags(policy: str, config: str | None) -> list[str]:
    out = ["--radix-eviction-policy", policy]
    return out + (["--radix-eviction-policy-config", config] if config else [])


def _deployment(i: int, policy: str, config: str | None) -> str:
    args = "".join(f"            - {json.dumps(a)}\n" for a in
                   ["--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--port", "30000",
                    "--mem-fraction-static", "0.85", *_flags(policy, config)])
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sglang-{i}\n"
            f"  labels: {{app: sglang, shard: '{i}'}}\nspec:\n  replicas: 2\n  template:\n"
            "    spec:\n      containers:\n        - name: sglang\n"
            "          image: lmsysorg/sglang:v0.5.23\n"
            '          command: ["python3", "-m", "sglang.launch_server"]\n'
            f"          args:\n{args}"
            "          resources: {limits: {nvidia.com/gpu: 1}}\n"
            "          ports: [{containerPort: 30000}]\n")


def _statefulset(i: int, policy: str, config: str | None) -> str:
    flags = " ".join(f"'{f}'" if f.startswith("{") else f for f in _flags(policy, config))
    return (f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: sglang-{i}\nspec:\n"
            "  template:\n    spec:\n      containers:\n        - name: sglang\n"
            '          command: ["/bin/bash", "-c"]\n          args:\n            - |\n'
            "              set -euo pipefail\n"
            "              exec python3 -m sglang.launch_server \\\n"
            '                --model-path "$MODEL" --port 30000 \\\n'
            f"                {flags}\n")


def _compose(i: int, policy: str, config: str | None) -> str:
    flags = " ".join(f"'{f}'" if f.startswith("{") else f for f in _flags(policy, config))
    return (f"services:\n  sglang-{i}:\n    image: lmsysorg/sglang:v0.5.23\n"
            '    ports: ["30000:30000"]\n'
            f"    command: >-\n      python3 -m sglang.launch_server --model-path m {flags}\n")


def _sglang_config(i: int, policy: str, config: str | None) -> str:
    text = f"model-path: meta-llama/Llama-3.1-8B-Instruct\nport: {30000 + i}\n"
    text += f"radix-eviction-policy: {policy}\n"
    return text + (f"radix-eviction-policy-config: '{config}'\n" if config else "")


def _script(i: int, policy: str, config: str | None) -> str:
    flags = " ".join(f"'{f}'" if f.startswith("{") else f for f in _flags(policy, config))
    return ("#!/bin/bash\nset -e\nMODEL=${MODEL:-meta-llama/Llama-3.1-8B-Instruct}\n"
            f'python -m sglang.launch_server --model-path "$MODEL" --port {30000 + i} \\\n'
            f"  {flags}\n")


def _dockerfile(i: int, policy: str, config: str | None) -> str:
    cmd = json.dumps(["python3", "-m", "sglang.launch_server", *_flags(policy, config)])
    return f"FROM lmsysorg/sglang:v0.5.23\nENV SHARD={i}\nCMD {cmd}\n"


SHAPES = [("deploy-{}.yaml", _deployment), ("sts-{}.yaml", _statefulset),
          ("compose-{}.yml", _compose), ("sglang-{}.yaml", _sglang_config),
          ("run-{}.sh", _script), ("{}.Dockerfile", _dockerfile)]


def generate(folder: Path, n: int) -> int:
    """Write ``n`` files; return how many carry a mistake (every tenth)."""
    bad = 0
    for i in range(n):
        name, make = SHAPES[i % len(SHAPES)]
        if i % 10 == 9:
            policy, config = MISTAKES[(i // 10) % len(MISTAKES)]
            bad += 1
        else:
            policy, config = POLICIES[i % len(POLICIES)]
        (folder / name.format(i)).write_text(make(i, policy, config))
    return bad


def hostile(folder: Path) -> list[tuple[str, Path]]:
    """The inputs the issue tried: each must end in its own error (or pass), quickly."""
    out = []

    def write(name: str, text: str) -> Path:
        path = folder / name
        path.write_text(text)
        return path

    out.append(("nested 100,000 levels",
                write("deep.yaml", "radix-eviction-policy: " + "[" * 100_000 + "]" * 100_000)))
    out.append(("self-referencing alias", write("cycle.yaml", "radix-eviction-policy: &a [*a]\n")))
    laughs = ['a0: &a0 ["lol"]'] + [
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    out.append(("billion laughs, 9 levels",
                write("laughs.yaml", "\n".join([*laughs, "radix-eviction-policy: *a9"]) + "\n")))
    items = "".join(f"  - {{name: item-{i}, value: {i}, tags: [a, b, c]}}\n"
                    for i in range(100_000))
    out.append(("5 MB YAML", write("big5.yaml", "items:\n" + items +
                                   "radix-eviction-policy: lfuu\n")))
    with (folder / "big50.yaml").open("w") as f:
        f.write("items:\n")
        for _ in range(10):
            f.write(items)
        f.write("radix-eviction-policy: lfuu\n")
    out.append(("50 MB YAML", folder / "big50.yaml"))
    out.append(("/dev/zero", Path("/dev/zero")))
    import os

    fifo = folder / "fifo.yaml"
    os.mkfifo(fifo)
    out.append(("a FIFO", fifo))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median is shown")
    ap.add_argument("--keep", type=Path, default=None, help="write the folder here and keep it")
    ap.add_argument("--no-hostile", dest="hostile", action="store_false",
                    help="skip the hostile inputs (deep nesting, alias bombs, huge files, FIFOs)")
    a = ap.parse_args()
    folder = a.keep or Path(tempfile.mkdtemp(prefix="bench_lint_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        bad = generate(folder, a.files)
        size = sum(p.stat().st_size for p in folder.iterdir())
        exe = Path(sys.executable).with_name("radix-evict")
        cli_times, codes = [], set()
        for _ in range(a.repeat):
            start = time.perf_counter()
            run = subprocess.run([str(exe), "lint", "--json", str(folder)],
                                 capture_output=True, text=True)
            cli_times.append(time.perf_counter() - start)
            codes.add(run.returncode)
            report = json.loads(run.stdout)
        from radix_evict.lint import lint_paths

        lint_paths([folder])  # warm: imports and the plugin registry
        inproc = []
        for _ in range(a.repeat):
            start = time.perf_counter()
            lint_paths([folder])
            inproc.append(time.perf_counter() - start)
        failed = len({e["file"] for e in report["errors"]})
        cli, inner = statistics.median(cli_times), statistics.median(inproc)
        print(f"{report['files']} files ({size / 2**20:.1f} MiB), {bad} with a mistake: "
              f"{failed} failed, exit {sorted(codes)}")
        print(f"radix-evict lint (fresh process): {cli:.2f} s median of {a.repeat}")
        print(f"lint_paths in process:           {inner:.2f} s "
              f"({inner / report['files'] * 1e3:.2f} ms per file)")
        if failed != bad:
            sys.exit(f"expected {bad} failing files, lint failed {failed}")
        if a.hostile:
            odd = folder / "hostile"
            odd.mkdir()
            print("hostile inputs (in process, one file each):")
            for what, path in hostile(odd):
                start = time.perf_counter()
                found = lint_paths([path]).problems
                took = time.perf_counter() - start
                kinds = ", ".join(sorted({p.type for p in found})) or "passes"
                longest = max((len(p.msg) for p in found), default=0)
                print(f"  {what:<26} {took:7.2f} s  {kinds} (longest message {longest} chars)")
    finally:
        if a.keep is None:
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
