"""Every problem type ``radix-evict lint`` reports, each at its exact ``file:line:column``.

Each case names the offending token by a marker string in the file; the problem
must sit on the marker's first character. ``test_every_problem_type_is_tested``
reads the lint modules for the types they can report, so a new type needs a case.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

CORE = Path(__file__).resolve().parents[2] / "core"
# Where lint's problem types are written: the engine, and the SGLang startup rules and
# vLLM offload verdict it shares.
ENGINE_SOURCES = [*sorted((CORE / "lint").rglob("*.py")), CORE / "sglang" / "startup.py",
                  CORE / "vllm" / "verdict.py"]
pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def position(text: str, marker: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the ``nth`` occurrence of ``marker``."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(marker, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def run(*args: str) -> Any:
    return run_cli("lint", *args, "--json")


def problems(path: Path, *extra: str) -> list[dict[str, Any]]:
    data = json.loads(run(str(path), *extra).stdout)
    return data["errors"] + data["warnings"]


SH = "#!/bin/sh\nexec python3 -m sglang.launch_server --model-path m "
VLLM = ("vllm serve m --kv-transfer-config '{\"kv_connector\": \"OffloadingConnector\", "
        '"kv_connector_extra_config": {"cpu_bytes_to_use": 1000000000, ')
# (name, file, content, type, severity, marker, nth occurrence of marker)
CASES: list[tuple[str, str, str, str, str, str, int]] = [
    ("unknown policy", "a.sh", SH + "--radix-eviction-policy lfuu\n",
     "unknown_policy", "error", "lfuu", 0),
    ("hidden policy", "a.sh", SH + "--radix-eviction-policy=mru\n",
     "hidden_policy", "error", "mru", 0),
    ("non-JSON config", "a.sh", SH + "--radix-eviction-policy slru "
     "--radix-eviction-policy-config '{\"protected_threshold\": 3,}'\n",
     "json_invalid", "error", "}'", 0),
    ("unknown key in a block scalar", "sts.yaml",
     "spec:\n  containers:\n    - command: [bash, -c]\n      args:\n        - |\n"
     "          exec python -m sglang.launch_server \\\n"
     "            --radix-eviction-policy slru --radix-eviction-policy-config "
     "'{\"protected_treshold\": 4}'\n",
     "extra_forbidden", "error", '"protected_treshold"', 0),
    ("config that is no object", "a.yaml",
     "args: ['--radix-eviction-policy', 'slru', '--radix-eviction-policy-config', '[4]']\n",
     "config_type", "error", "[4]", 0),
    ("tlru value that is no number", "a.sh", SH + "--radix-eviction-policy tlru "
     "--radix-eviction-policy-config '{\"threshold\": \"9\"}'\n",
     "number_type", "error", '"9"', 0),
    ("tlru negative value", "a.sh", SH + "--radix-eviction-policy tlru "
     "--radix-eviction-policy-config '{\"threshold\": 9, \"next_prompt_estimate\": -1}'\n",
     "greater_than_equal", "error", "-1}", 0),
    ("tlru threshold not above the estimate", "k8s.yaml",
     "containers:\n  - args:\n      - --radix-eviction-policy=tlru\n"
     "      - '--radix-eviction-policy-config={\"threshold\": 100, "
     "\"next_prompt_estimate\": 512}'\n",
     "value_error", "error", "100", 0),
    ("slru float threshold", "Dockerfile",
     'FROM x\nCMD ["python3", "-m", "sglang.launch_server", "--radix-eviction-policy", "slru", '
     '"--radix-eviction-policy-config", "{\\"protected_threshold\\": 2.5}"]\n',
     "int_type", "error", "2.5", 0),
    ("slru threshold past a C long", "a.sh", SH + "--radix-eviction-policy slru "
     "--radix-eviction-policy-config '{\"protected_threshold\": 99999999999999999999}'\n",
     "int_range", "error", "99999", 0),
    ("misspelt flag", "a.sh", SH + "--radix-evicton-policy lfu\n",
     "unknown_option", "error", "--radix-evicton-policy", 0),
    ("ambiguous abbreviation", "a.sh", SH + "--radix-eviction-pol lfu\n",
     "ambiguous_option", "error", "--radix-eviction-pol", 0),
    ("flag without a value", "a.yaml",
     "command: [python3, -m, sglang.launch_server, --radix-eviction-policy]\n",
     "missing_value", "error", "--radix-eviction-policy", 0),
    ("abbreviation SGLang expands", "a.sh", SH + "--radix-eviction-policy-c '{}'\n",
     "abbreviation", "warning", "--radix-eviction-policy-c", 0),
    ("flag given twice", "a.sh", SH + "--radix-eviction-policy lfu --radix-eviction-policy lru\n",
     "overridden", "warning", "--radix-eviction-policy", 0),
    ("--config=FILE that SGLang ignores", "a.sh", SH + "--config=x.yaml "
     "--radix-eviction-policy lru\n", "config_ignored", "warning", "--config=", 0),
    ("falsy config SGLang ignores", "a.sh", SH + "--radix-eviction-policy lfu "
     "--radix-eviction-policy-config 0\n", "config_ignored", "warning", "0\n", 0),
    ("two --config files", "a.sh", SH + "--config a.yaml --config b.yaml "
     "--radix-eviction-policy lru\n", "config_file", "error", "--config", 1),
    ("--config file that is here nowhere", "a.sh", SH + "--config /nowhere/s.yaml "
     "--radix-eviction-policy lru\n", "config_not_found", "note", "/nowhere", 0),
    ("setting spelled twice", "helm.yaml",
     "server:\n  radix-eviction-policy: lru\n  radix_eviction_policy: bogus\n",
     "duplicate_setting", "error", "radix_eviction_policy", 0),
    ("JSON key twice", "a.sh", SH + "--radix-eviction-policy slru --radix-eviction-policy-config "
     "'{\"protected_threshold\": 4, \"protected_threshold\": 3}'\n",
     "duplicate_key", "error", '"protected_threshold"', 1),
    ("policy that is no name", "values.yaml", "server:\n  radix-eviction-policy: 3\n",
     "policy_type", "error", "3", 0),
    ("policy from a radix-evict package", "a.sh", SH + "--radix-eviction-policy gdsf\n",
     "plugin_policy", "note", "gdsf", 0),
    ("radix-evict policy with lifecycle callbacks (runs: the plugin delivers its events)",
     "a.sh", SH + "--radix-eviction-policy reuse\n", "plugin_policy", "note", "reuse", 0),
    ("radix-evict policy where SGLang would not load the plugin", "a.sh",
     SH + "--radix-eviction-policy gdsf\n", "plugin_unavailable", "error", "gdsf", 0),
    ("vLLM: a bare radix-evict name", "v.sh", VLLM + '"eviction_policy": "gdsf", '
     '"cache_policy_module_path": "radix_evict.vllm"}}\'\n', "unknown_policy", "error",
     '"gdsf"', 0),
    ("vLLM: a module path that does not import", "v.sh", VLLM + '"eviction_policy": "mine", '
     '"cache_policy_module_path": "no_such_pkg.policies"}}\'\n', "module_not_found", "error",
     '"no_such_pkg', 0),
    ("vLLM: its own name wins over the module's", "v.sh", VLLM + '"eviction_policy": "lru", '
     '"cache_policy_module_path": "radix_evict.vllm"}}\'\n', "shadowed_policy", "warning",
     '"lru"', 0),
    ("vLLM: radix-evict's config for vLLM's own policy", "v.sh", VLLM +
     '"eviction_policy": "arc", "radix_eviction_config": {"x": 1}}}\'\n', "config_ignored",
     "warning", '{"x"', 0),
    ("vLLM: offload connector without its size", "v.yaml",
     "args: [--kv-transfer-config, '{\"kv_connector\": \"OffloadingConnector\", "
     "\"kv_connector_extra_config\": {\"eviction_policy\": \"arc\"}}']\n",
     "cpu_bytes_missing", "error", '{"eviction_policy"', 0),
    ("vLLM: value set at deploy time", "v.sh",
     "vllm serve m --kv-transfer-config \"$KV\"\n", "not_checked", "note", "$KV", 0),
    ("value set at deploy time", "a.yaml",
     "args: [--radix-eviction-policy, $(POLICY)]\n", "not_checked", "note", "$(POLICY)", 0),
    ("slru threshold that makes it LRU", "sglang.yaml",
     "radix-eviction-policy: slru\nradix-eviction-policy-config: '{\"protected_threshold\": 0}'\n",
     "plain_lru", "warning", "0}", 0),
    ("value radix-evict refuses, SGLang runs", "a.sh", SH + "--radix-eviction-policy tlru "
     "--radix-eviction-policy-config '{\"threshold\": NaN}'\n",
     "finite_number", "warning", "NaN", 0),
    ("TOML table", "settings.toml",
     '[server]\nradix-eviction-policy = "tlru"\n\n[server.radix-eviction-policy-config]\n'
     "next_prompt_estimate = 6\nthreshold = 4\n", "value_error", "error", "4\n", 0),
    ("Helm template value", "values.yaml",
     "args: ['--radix-eviction-policy={{ .Values.policy }}']\n", "not_checked", "note",
     "{{", 0),
    # HiCache (the host tier): SGLang's parser, its startup hooks, what it ignores
    ("HiCache write policy not a choice", "a.sh", SH + "--enable-hierarchical-cache "
     "--hicache-write-policy write_throuhg\n", "invalid_choice", "error", "write_throuhg", 0),
    ("HiCache size not an int", "k8s.yaml", "containers:\n  - args: [--enable-hicache, "
     "--hicache-size=1.5]\n", "invalid_value", "error", "1.5", 0),
    ("HiCache host memory fraction out of range", "a.sh", SH + "--hicache-host-memory-fraction "
     "1.5\n", "fraction_range", "error", "1.5", 0),
    ("HiCache with --disable-radix-cache", "a.sh", SH + "--disable-radix-cache "
     "--enable-hierarchical-cache\n", "hicache_conflict", "error", "--enable-hier", 0),
    ("HiCache buffer_only without storage", "sglang.yaml", "enable-hierarchical-cache: true\n"
     "hicache-host-memory-mode: buffer_only\n", "buffer_only_storage", "error", "buffer_only",
     0),
    ("HiCache buffer_only on a decode server", "a.sh", SH + "--enable-hicache "
     "--hicache-host-memory-mode buffer_only --hicache-storage-backend file "
     "--disaggregation-mode decode\n", "buffer_only_decode", "error", "buffer_only", 0),
    ("HiCache ratio that sizes no pool", "a.sh", SH + "--enable-hicache --hicache-ratio=-2\n",
     "ratio_value", "error", "-2", 0),
    ("HiCache switch given a value", "k8s.yaml", "containers:\n  - args:\n"
     "      - --enable-hierarchical-cache\n      - 'true'\n", "switch_value", "error", "true", 0),
    ("HiCache flag without HiCache", "a.sh", SH + "--hicache-ratio 3\n", "hicache_ignored",
     "warning", "3\n", 0),
    ("HiCache layout SGLang rewrites (placed at the cause)", "a.sh", SH + "--enable-hicache "
     "--hicache-io-backend direct\n", "hicache_rewritten", "warning", "direct", 0),
    ("HiCache ratio under 1", "values.yaml", "sglang:\n  enable-hierarchical-cache: true\n"
     "  hicache-ratio: 0.5\n", "ratio_small", "warning", "0.5", 0),
    ("HiCache ratio beside a size", "a.sh", SH + "--enable-hicache --hicache-size 64 "
     "--hicache-ratio 3\n", "ratio_ignored", "warning", "3\n", 0),
    ("HiCache size below 0", "a.sh", SH + "--enable-hicache --hicache-size=-4\n",
     "size_ignored", "warning", "-4", 0),
    ("HiCache fraction beside a ratio", "a.sh", SH + "--enable-hicache --hicache-ratio 3 "
     "--hicache-host-memory-fraction 0.5\n", "fraction_ignored", "warning", "0.5", 0),
    ("malformed YAML", "a.yaml", "a:\n  radix-eviction-policy: [slru\n",
     "parse_error", "error", "", -1),
    ("nesting past the limit", "deep.yaml", "radix: " + "[" * 300 + "]" * 300 + "\n",
     "too_deep", "error", "[", 199),  # the root mapping is a level too
    ("alias inside its own anchor", "cycle.yaml", "radix: &a [*a]\n",
     "alias_cycle", "error", "*a", 0),
    ("alias expansion past the budget", "laughs.yaml",
     "".join(f"{a}: &{a} {{" + ", ".join(f"k{i}: {'*' + p if p else 'x'}" for i in range(10))
             + "}\n" for a, p in zip("abcde", ["", "a", "b", "c", "d"], strict=True))
     + "radix-eviction-policy-config: *e\n",
     "value_too_large", "error", "&e {", 0),  # the aliased node itself
]


@pytest.mark.parametrize(("name", "fname", "text", "type_", "severity", "marker", "nth"), CASES,
                         ids=[c[0] for c in CASES])
def test_problem_at_its_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                              fname: str, text: str, type_: str, severity: str, marker: str,
                              nth: int) -> None:
    if type_ in ("plugin_policy", "plugin_unavailable"):
        # gdsf and reuse: the example package's
        from radix_evict import registry

        monkeypatch.setenv("RADIX_EVICT_PLUGINS", "costaware")
        monkeypatch.setenv("SGLANG_PLUGINS", "other" if type_ == "plugin_unavailable" else "")
        registry.reload()
    path = tmp_path / fname
    path.write_text(text)
    found = [p for p in problems(path) if p["type"] == type_]
    assert found, problems(path)
    p = found[0]
    assert p["severity"] == severity and p["file"] == str(path)
    if nth < 0:  # the parser's position: the line it stopped on
        assert p["line"] == text.count("\n") + 1 and p["column"] >= 1
        return
    assert (p["line"], p["column"]) == position(text, marker, nth), p
    human = run_cli("lint", str(path))
    line, col = position(text, marker, nth)
    assert f"{path}:{line}:{col}: {severity}:" in human.output
    assert "Traceback" not in human.output


def test_file_level_problems(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w") as f:
        f.write("radix-eviction-policy: lru\n")
        f.write("x: " + "y" * (9 * 2**20) + "\n")
    missing = tmp_path / "missing.yaml"
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    good = tmp_path / "ok.yaml"
    good.write_text("radix-eviction-policy: lfuu\n")
    r = run(str(big), str(missing), str(fifo), "/dev/zero", str(good))
    data = json.loads(r.stdout)
    types = {(Path(e["file"]).name, e["type"]) for e in data["errors"]}
    assert types == {("big.yaml", "file_too_large"), ("missing.yaml", "file_unreadable"),
                     ("pipe.yaml", "not_regular_file"), ("zero", "not_regular_file"),
                     ("ok.yaml", "unknown_policy")}
    assert r.exit_code == 2 and data["files"] == 5


def test_internal_error_costs_only_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    from radix_evict.lint import engine

    real = engine.Linter._invocations

    def broken(self: Any, source: Any, *args: Any) -> Any:
        if source.path.endswith("boom.yaml"):
            raise KeyError("boom")
        return real(self, source, *args)

    monkeypatch.setattr(engine.Linter, "_invocations", broken)
    boom, other = tmp_path / "boom.yaml", tmp_path / "other.yaml"
    boom.write_text("radix-eviction-policy: lru\n")
    other.write_text("radix-eviction-policy: nope\n")
    data = json.loads(run(str(boom), str(other)).stdout)
    assert [(Path(e["file"]).name, e["type"]) for e in data["errors"]] == [
        ("boom.yaml", "internal_error"), ("other.yaml", "unknown_policy")]


def test_slow_file_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from radix_evict.lint import engine

    monkeypatch.setattr(engine, "SECONDS_PER_FILE", 1)
    monkeypatch.setattr(engine.Linter, "_invocations",
                        lambda self, *a: time.sleep(5) or [])
    path = tmp_path / "slow.yaml"
    path.write_text("radix-eviction-policy: lru\n")
    start = time.monotonic()
    (err,) = json.loads(run(str(path)).stdout)["errors"]
    assert err["type"] == "too_slow" and time.monotonic() - start < 4


def test_unreadable_text(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"radix-eviction-policy: caf\xe9\n")
    (err,) = json.loads(run(str(path)).stdout)["errors"]
    assert err["type"] == "parse_error" and "UTF-8" in err["msg"]


TESTED = {c[3] for c in CASES} | {"file_too_large", "file_unreadable", "not_regular_file",
                                  "internal_error", "too_slow", "parse_error"}
# Types reported only through registry problems (their own tests are in test_cli_lint.py
# or need a broken plugin package: test_plugins.py covers the registry's messages).
ELSEWHERE = {"plugin_failed", "name_conflict", "too_complex", "policy_failed"}


def test_every_problem_type_is_tested() -> None:
    hicache_rules = (CORE / "lint" / "hicache.py").read_text()  # its flag table reads as types
    source = "\n".join(re.sub(r"__all__[^=]*= \[.*?\]", "", p.read_text(), flags=re.DOTALL)
                       for p in ENGINE_SOURCES if p.name != "hicache.py")
    emitted = set(re.findall(r'"([a-z]+(?:_[a-z]+)+)",\s*\n?\s*f?"', source))
    emitted |= set(re.findall(r'LimitExceeded\(\s*"([a-z_]+)"', source))
    emitted |= set(re.findall(r'problem_at\([^,]+,\s*[^,]+,\s*"([a-z_]+)"', source))
    emitted |= set(re.findall(r'at_(?:policy|config|setting)\(\s*(?:\([^)]*\),\s*)?"([a-z_]+)"',
                              source))
    emitted |= {t.lower() for t in re.findall(r"ProblemType\.([A-Z_]+)", source)}
    # HiCache's rules: a Finding's type, and check.py's kinds of flags SGLang does not use
    emitted |= set(re.findall(r'Finding\(\s*(?:ERROR|WARNING),\s*"([a-z_]+)"', hicache_rules))
    emitted |= set(re.findall(r'"([a-z]+_ignored)"', (CORE / "sglang" / "check.py").read_text()))
    emitted -= {"utf_8", "utf_8_sig"}
    untested = {t for t in emitted if t not in TESTED | ELSEWHERE}
    assert not untested, f"problem types without a location test: {sorted(untested)}"
