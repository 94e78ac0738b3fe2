"""``simulate --hints``: the library's parser behind one option, errors as usage errors."""

from __future__ import annotations

from helpers.rigs import run_cli, simulate_json


def test_hints_reach_the_workload_description() -> None:
    data = simulate_json("-w", "chat", "-p", "lru", "--pool-tokens", "50000",
                         "--param", "convs=40", "--hints", "session-end:coverage=0.5")
    text = str(data)
    assert "session-end:coverage=0.5,error=0,seed=0" in text
    assert "what if clients sent this" in text


def test_a_bad_hint_is_a_usage_error_naming_the_part() -> None:
    r = run_cli("simulate", "-w", "chat", "-p", "lru", "--hints", "session-end:error=2")
    assert r.exit_code == 2
    assert "--hints" in r.output and "error must be a number from 0 to 1" in r.output
