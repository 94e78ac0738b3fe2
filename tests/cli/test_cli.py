"""CLI: list, show, validate, schema, error mapping and the installed console script."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from radix_evict import PolicySpec, hookimpl, registry
from radix_evict.builtin_policies import LRUPolicy

PUBLIC = ["lru", "lfu", "slru", "priority", "tlru"]


pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


Invoke = Callable[..., Any]


@pytest.fixture
def plugin() -> Iterator[Callable[..., None]]:
    """Add in-process plugins for one test; removed afterwards."""
    names: list[str] = []

    def add(obj: Any, name: str) -> None:
        registry.add_plugin(obj, name=name, distribution="cli-test-dist", version="9.9")
        names.append(name)

    yield add
    for n in names:
        registry.remove_plugin(n)


class ExtendFifo:
    """A package that offers the hidden fifo as a --policy choice."""

    @hookimpl
    def radix_evict_extend_choices(self, extend: Callable[..., None]) -> None:
        extend("fifo")


class Broken:
    """A package that registers 'boomer' and then fails: the policy must not be usable."""

    class Boomer(LRUPolicy):
        name = "boomer"

    @hookimpl
    def radix_evict_register_policies(self, register: Callable[[PolicySpec], None]) -> None:
        register(PolicySpec(name="boomer", policy=self.Boomer, summary="never loads"))
        raise RuntimeError("boom at import time")


def flat(text: str) -> str:
    """Help text with rich's box drawing and wrapping removed."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


# ----------------------------------------------------------------------------- list


def test_list_shows_the_public_policies_with_keys_and_source(cli: Invoke) -> None:
    r = cli("list", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["policies"]
    assert [p["name"] for p in rows] == PUBLIC
    by = {p["name"]: p for p in rows}
    assert by["slru"]["config_keys"] == ["protected_threshold"]
    assert by["tlru"]["config_keys"] == ["threshold", "next_prompt_estimate"]
    assert by["lru"]["config_keys"] == []
    assert all(p["distribution"] == "radix-evict" and p["summary"] for p in rows)
    assert "failures" not in json.loads(r.stdout)


def test_list_all_marks_hidden_and_shows_failed_plugins(
    cli: Invoke, plugin: Callable[..., None]
) -> None:
    plugin(Broken(), "broken-cli")
    r = cli("list", "--all", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    hidden = {p["name"] for p in data["policies"] if p["hidden"]}
    assert hidden == {"fifo", "mru", "filo"}
    assert "boomer" not in {p["name"] for p in data["policies"]}
    (failure,) = data["failures"]
    assert failure["entry_point"] == "broken-cli"
    assert "boom at import time" in failure["error"]
    table = cli("list", "--all")
    assert table.exit_code == 0
    assert "fifo (hidden)" in table.stdout
    assert "boom at import time" in table.stdout
    plain = cli("list")
    assert "fifo" not in plain.stdout and "--all" in plain.stderr


# ----------------------------------------------------------------------------- show


def test_show_json_has_keys_defaults_constraints_and_schema(cli: Invoke) -> None:
    r = cli("show", "slru", "--json")
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    (key,) = info["config_keys"]
    assert key["key"] == "protected_threshold"
    assert key["type"] == "integer" and key["default"] == 2 and key["constraint"] == ">= 0"
    assert key["description"]
    assert info["schema"]["additionalProperties"] is False
    assert "protected_threshold" in info["schema"]["properties"]


def test_show_table_and_unknown_policy(cli: Invoke) -> None:
    r = cli("show", "tlru")
    assert r.exit_code == 0
    assert "next_prompt_estimate" in r.stdout and "JSON Schema" in r.stdout
    r = cli("show", "lruu")
    assert r.exit_code == 1
    assert "unknown policy 'lruu'" in r.stderr and "did you mean 'lru'" in r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- validate


def test_validate_ok(cli: Invoke) -> None:
    r = cli("validate", "--policy", "slru", "--config", '{"protected_threshold": 3}')
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("OK")
    r = cli("validate", "--policy", "lru", "--json")
    assert json.loads(r.stdout) == {"status": "ok", "policy": "lru", "config": None,
                                    "errors": []}


@pytest.mark.parametrize(
    ("policy", "config", "key", "type_", "needle"),
    [
        ("slru", '{"protected_treshold": 3}', "protected_treshold", "extra_forbidden",
         "did you mean 'protected_threshold'"),
        ("slru", '{"protected_threshold": "3"}', "protected_threshold", "int_type",
         "must be an integer"),
        ("slru", '{"protected_threshold": -1}', "protected_threshold", "greater_than_equal",
         ">= 0"),
        ("lru", '{"window": 3}', "window", "extra_forbidden", "takes no config keys"),
        ("tlru", '{"threshold": 4, "next_prompt_estimate": 6}', "threshold", "value_error",
         "greater than next_prompt_estimate"),
        ("slru", '{"protected_threshold": 3', None, "json_invalid", "malformed JSON"),
    ],
)
def test_validate_reports_each_error(
    cli: Invoke, policy: str, config: str, key: str | None, type_: str, needle: str
) -> None:
    r = cli("validate", "--policy", policy, "--config", config, "--json")
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert data["status"] == "invalid" and data["policy"] == policy
    (err,) = data["errors"]
    assert err["key"] == key and err["type"] == type_
    text = cli("validate", "--policy", policy, "--config", config)
    assert text.exit_code == 1
    assert needle in text.stderr and f"policy {policy!r}" in text.stderr
    assert "Traceback" not in text.stderr


def test_validate_lists_every_problem(cli: Invoke) -> None:
    r = cli("validate", "-p", "tlru", "-c", '{"threshold": "9", "next_promt_estimate": 1}',
            "--json")
    assert r.exit_code == 1
    keys = {e["key"] for e in json.loads(r.stdout)["errors"]}
    assert {"threshold", "next_promt_estimate"} <= keys


def test_validate_config_from_file(cli: Invoke, tmp_path: Path) -> None:
    cfg = tmp_path / "slru.json"
    cfg.write_text('{"protected_threshold": 4}')
    assert cli("validate", "-p", "slru", "-c", f"@{cfg}").exit_code == 0
    r = cli("validate", "-p", "slru", "-c", f"@{tmp_path / 'missing.json'}")
    assert r.exit_code == 2 and "cannot read" in r.stderr


@pytest.mark.parametrize("hidden", ["fifo", "mru", "filo"])
def test_hidden_policy_fails_with_the_registry_message(cli: Invoke, hidden: str) -> None:
    r = cli("validate", "--policy", hidden)
    assert r.exit_code == 1
    assert "hidden" in r.stderr and "extend" in r.stderr
    assert "lru, lfu, slru, priority, tlru" in r.stderr


def test_hidden_policy_allowed_once_a_package_extends_the_choices(
    cli: Invoke, plugin: Callable[..., None]
) -> None:
    plugin(ExtendFifo(), "extend-fifo")
    assert cli("validate", "--policy", "fifo").exit_code == 0
    assert cli("validate", "--policy", "mru").exit_code == 1
    names = [p["name"] for p in json.loads(cli("list", "--json").stdout)["policies"]]
    assert names == [*PUBLIC, "fifo"]


def test_unknown_policy_lists_choices_and_suggests(cli: Invoke) -> None:
    r = cli("validate", "--policy", "sllru", "--json")
    assert r.exit_code == 1
    (err,) = json.loads(r.stdout)["errors"]
    assert err["type"] == "unknown_policy" and "slru" in err["msg"]


def test_policy_from_a_failed_plugin_is_an_environment_error(
    cli: Invoke, plugin: Callable[..., None]
) -> None:
    plugin(Broken(), "broken-cli")
    r = cli("validate", "--policy", "boomer")
    assert r.exit_code == 2
    assert "failed to load" in r.stderr and "cli-test-dist" in r.stderr
    r = cli("simulate", "--policy", "boomer", "--param", "convs=2")
    assert r.exit_code == 2


def test_an_unrelated_failed_plugin_leaves_a_name_unknown(
    cli: Invoke, plugin: Callable[..., None]
) -> None:
    plugin(Broken(), "broken-cli")
    r = cli("validate", "-p", "nosuch", "--json")
    assert r.exit_code == 1, r.output
    (err,) = json.loads(r.stdout)["errors"]
    assert err["type"] == "unknown_policy"
    assert "boom at import time" in err["msg"]  # noted, not blamed


def test_list_without_all_mentions_failed_plugins(
    cli: Invoke, plugin: Callable[..., None]
) -> None:
    plugin(Broken(), "broken-cli")
    for args in (["list"], ["list", "--json"]):
        r = cli(*args)
        assert r.exit_code == 0, r.output
        assert "cli-test-dist 9.9 (entry point 'broken-cli') failed to load" in r.stderr


# ----------------------------------------------------------------------------- schema


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield node
        for v in node.values():
            yield from _objects(v)
    elif isinstance(node, list):
        for v in node:
            yield from _objects(v)


def test_schema_is_json_and_closed(cli: Invoke, tmp_path: Path) -> None:
    r = cli("schema")
    assert r.exit_code == 0
    schema = json.loads(r.stdout)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["properties"]) == {*PUBLIC, "fifo", "mru", "filo"}
    objects = list(_objects(schema))
    assert len(objects) >= 9
    assert all(o.get("additionalProperties") is False for o in objects)
    out = tmp_path / "radix-evict.schema.json"
    r = cli("schema", "--output", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    assert json.loads(out.read_text()) == schema
    one = json.loads(cli("schema", "--policy", "slru").stdout)
    assert one["properties"]["protected_threshold"]["minimum"] == 0


# ----------------------------------------------------------------------------- conventions


def test_help_lists_the_choices_at_call_time(cli: Invoke, plugin: Callable[..., None]) -> None:
    plugin(ExtendFifo(), "extend-fifo-help")
    r = cli("simulate", "--help")
    assert r.exit_code == 0
    assert "one of lru, lfu, slru, priority, tlru, fifo." in flat(r.stdout)
    assert "{choices}" not in r.stdout


def test_usage_errors_exit_2(cli: Invoke) -> None:
    assert cli("simulate", "--no-such-option").exit_code == 2
    assert cli("validate").exit_code == 2  # --policy is required
    assert cli("simulate", "--page-size", "0").exit_code == 2
    r = cli("simulate", "--param", "convs")
    assert r.exit_code == 2 and "KEY=VALUE" in r.stderr


def test_internal_errors_show_a_traceback_only_with_verbose(
    cli: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    import radix_evict.sim.simulate as sim

    def explode(*_: Any, **__: Any) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(sim, "replay_policies", explode)
    r = cli("simulate", "--param", "convs=2", "--policy", "lru")
    assert r.exit_code == 2
    assert "internal error: RuntimeError: kaboom" in r.stderr
    assert "Traceback" not in r.stderr and "-v" in r.stderr
    r = cli("-v", "simulate", "--param", "convs=2", "--policy", "lru")
    assert r.exit_code == 2 and "Traceback" in r.stderr
    assert r.stderr.count("kaboom") == 2  # the raise line of the traceback, and the error once


def test_verbose_prints_the_error_once(cli: Invoke) -> None:
    r = cli("-v", "sweep", "-p", "nosuch", "-P", "convs=3", "--dry-run")
    assert r.exit_code == 1 and "Traceback" in r.stderr
    assert r.stderr.count("unknown policy 'nosuch'") == 1, r.stderr


def test_json_errors_are_json_on_stdout(cli: Invoke) -> None:
    r = cli("simulate", "--json", "--policy", "nope", "--param", "convs=2")
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["status"] == "error" and data["exit_code"] == 1
    assert data["errors"][0]["type"] == "unknown_policy"


def test_importing_the_cli_loads_no_plugin() -> None:
    code = ("import radix_evict.cli; from radix_evict import registry; "
            "assert not registry.loaded, 'plugins loaded at import'")
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- console script


def _script() -> str:
    local = Path(sys.executable).parent / "radix-evict"
    found = str(local) if local.exists() else shutil.which("radix-evict")
    if found is None:
        pytest.skip("radix-evict console script is not installed")
    return found


def test_installed_console_script(tmp_path: Path) -> None:
    exe = _script()
    env = {**os.environ, "RADIX_EVICT_PLUGINS": ""}
    ok = subprocess.run([exe, "list", "--json"], capture_output=True, text=True, env=env,
                        timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert [p["name"] for p in json.loads(ok.stdout)["policies"]] == PUBLIC
    bad = subprocess.run(
        [exe, "validate", "--policy", "slru", "--config", '{"protected_treshold": 3}'],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert bad.returncode == 1
    assert "did you mean 'protected_threshold'" in bad.stderr
    assert bad.stdout == "" and "Traceback" not in bad.stderr
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 4, "output_length": 1, '
                     '"hash_ids": [0]}\n{"timestamp": 1, "input_length": -4}\n')
    broken = subprocess.run([exe, "simulate", "--trace", str(trace)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert broken.returncode == 1
    assert f"{trace}:2" in broken.stderr and "Traceback" not in broken.stderr


def test_main_exits_with_the_code_after_atexit_and_a_full_flush() -> None:
    """main() skips the interpreter's teardown, not the exit code, atexit or buffered output."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "from radix_evict.cli import main\n"
        "sys.argv = ['radix-evict'] + sys.argv[1:]\n"
        "main()\n"
    )
    env = {**os.environ, "RADIX_EVICT_PLUGINS": ""}
    ok = subprocess.run([sys.executable, "-c", code, "schema", "--policy", "tlru"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) and "atexit ran" in ok.stderr
    bad = subprocess.run([sys.executable, "-c", code, "show", "nope"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1 and "atexit ran" in bad.stderr
    usage = subprocess.run([sys.executable, "-c", code, "simulate", "--page-size", "0"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert usage.returncode == 2 and "atexit ran" in usage.stderr
