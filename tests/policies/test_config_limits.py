"""Every config input is read within limits: nesting, number length, size, and what a file is.

One JSON reader (``radix_evict.inputs.load_json``, behind ``parse_json_config``)
serves RadixCache, load_policy, ``validate`` and ``simulate -c``; ``@FILE``
configs are read through ``radix_evict.inputs.read_text``. Each refusal is a
clear problem or usage error, never ``internal error``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict import KVPool, PolicyConfigError, RadixCache, load_policy, registry
from radix_evict.errors import ProblemType
from radix_evict.inputs import CONFIG_BYTES

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")

DEEP = "[" * 100_000 + "]" * 100_000
LONG_NUMBER = '{"protected_threshold": ' + "9" * 5000 + "}"


def assert_clean(r: Any, code: int, *needles: str) -> None:
    assert r.exit_code == code, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output
    for needle in needles:
        assert needle in r.output, r.output


@pytest.mark.parametrize(("text", "needle"), [
    (DEEP, "nested 100000 levels deep"),
    ('{"protected_threshold": [' + "[" * 500 + "]" * 500 + "]}", "nested 502 levels deep"),
    (LONG_NUMBER, "a number of 5000 digits"),
    ('{"protected_threshold": 1, "x": "' + "a" * CONFIG_BYTES + '"}', "MiB limit"),
])
def test_the_library_refuses_configs_over_a_limit_as_a_problem(text: str, needle: str) -> None:
    for build in (lambda: load_policy("slru", text),
                  lambda: RadixCache(KVPool(size=8, device="cpu"), policy="slru",
                                     policy_config=text),
                  lambda: registry.parse_config("slru", text)):
        with pytest.raises(PolicyConfigError, match=needle) as err:
            build()
        [problem] = err.value.problems
        assert problem.type == ProblemType.INPUT_LIMIT and problem.policy == "slru"
    assert registry.validate("slru", text)[0].type == ProblemType.INPUT_LIMIT


def test_a_huge_integer_given_as_a_python_value_is_described_not_printed() -> None:
    [problem] = registry.validate("slru", {"protected_threshold": -(10**5000)})
    assert "must be >= 0, got an integer of about 5001 digits" in problem.msg


@pytest.mark.parametrize("as_file", [False, True])
@pytest.mark.parametrize(("text", "needle"), [
    (DEEP, "nested 100000 levels deep, over the limit of 200"),
    (LONG_NUMBER, "a number of 5000 digits is over the limit of 4000 digits"),
])
def test_validate_reports_a_config_over_a_limit(
    tmp_path: Path, as_file: bool, text: str, needle: str
) -> None:
    arg = text
    if as_file:
        path = tmp_path / "deep.cfg"
        path.write_text(text)
        arg = f"@{path}"
    assert_clean(run_cli("validate", "-p", "slru", "-c", arg), 1, needle)
    r = run_cli("validate", "-p", "slru", "-c", arg, "--json")
    assert_clean(r, 1)
    data = json.loads(r.stdout)
    assert data["status"] == "invalid" and data["errors"][0]["type"] == "input_limit"


def test_simulate_reports_a_config_over_a_limit() -> None:
    r = run_cli("simulate", "-p", "slru", "--param", "convs=2", "-c", LONG_NUMBER)
    assert_clean(r, 1, "a number of 5000 digits")


@pytest.mark.parametrize(("target", "needle"), [
    ("/dev/zero", "/dev/zero: not a regular file (a device)"),
    ("{tmp}", "not a regular file (a directory)"),
    ("{tmp}/missing.json", "missing.json: cannot read"),
    ("{tmp}/huge.json", "MiB is over the 1 MiB limit for a config file"),
])
def test_a_config_file_that_cannot_be_a_config_is_a_usage_error(
    tmp_path: Path, target: str, needle: str
) -> None:
    (tmp_path / "huge.json").write_text(" " * (CONFIG_BYTES + 1) + "{}")
    path = target.format(tmp=tmp_path)
    r = run_cli("validate", "-p", "lru", "-c", f"@{path}")
    assert_clean(r, 2, f"--config @{path}: ", needle)
