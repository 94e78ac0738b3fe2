"""Config errors name the key: strict types, ranges, typos, and an unusable weights file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from radix_evict import PolicyConfigError, load_policy


@pytest.mark.parametrize(
    ("config", "key", "says"),
    [
        ({"learning_rat": 0.1}, "learning_rat", "did you mean 'learning_rate'"),
        ({"horizon": 0}, "horizon", "must be > 0.0"),
        ({"horizon": "1"}, "horizon", "must be a number"),
        ({"batch": 4.5}, "batch", "must be an integer"),
        ({"batch": 0}, "batch", "must be >= 1"),
        ({"sharpness": -1.0}, "sharpness", "must be >= 0"),
        ({"max_lifetime": 0.5}, "max_lifetime", "must be >= 1"),
        ({"learn": "yes"}, "learn", "true or false"),
        ({"weights": 3}, "weights", "must be a string"),
        ({"weights": ""}, "weights", "at least 1 character"),
        ({"ghosts": -1}, "ghosts", "must be >= 0"),
    ],
)
def test_a_bad_key_is_named(config: dict[str, object], key: str, says: str) -> None:
    with pytest.raises(PolicyConfigError) as err:
        load_policy("learned", config)
    assert err.value.key == key
    assert f"'{key}'" in str(err.value)
    assert says in str(err.value)


def test_a_missing_weights_file_is_a_config_error_naming_key_and_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(PolicyConfigError) as err:
        load_policy("learned", {"weights": str(missing)})
    assert err.value.key == "weights"
    assert str(missing) in str(err.value) and "cannot read" in str(err.value)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not a JSON weights file"),
        ('{"format": "other", "version": 1}', "'format' must be"),
        ('{"format": "radix-evict-learned-weights", "version": 9}', "'version' must be"),
        ('{"format": "radix-evict-learned-weights", "version": 1, "features": {"hitz": [1]}}',
         "unknown feature 'hitz'"),
        ('{"format": "radix-evict-learned-weights", "version": 1, "features": {"hits": [1]}}',
         "feature 'hits' needs a list of 6 numbers"),
        ('{"format": "radix-evict-learned-weights", "version": 1, "bias": NaN}',
         "'bias' must be a finite number"),
    ],
)
def test_a_bad_weights_file_is_refused_with_the_problem(tmp_path: Path, content: str,
                                                        says: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PolicyConfigError) as err:
        load_policy("learned", {"weights": str(path)})
    assert err.value.key == "weights"
    assert says in str(err.value), str(err.value)
    assert str(path) in str(err.value)


def test_the_cli_validates_and_names_the_key(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from radix_evict.cli.app import app

    runner = CliRunner()
    ok = runner.invoke(app, ["validate", "--policy", "learned", "--config",
                             json.dumps({"horizon": 0.25, "sharpness": 0.5})])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(app, ["validate", "--policy", "learned", "--config",
                              json.dumps({"horizn": 0.25})])
    assert bad.exit_code == 1
    assert "horizn" in bad.output and "horizon" in bad.output
