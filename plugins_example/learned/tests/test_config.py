"""Config errors name the key: strict types, ranges, typos, and an unusable weights file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from radix_evict_learned import FEATURES

from radix_evict import PolicyConfigError, load_policy
from radix_evict.testing import call_bounded


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


WEIGHTS = {"format": "radix-evict-learned-weights", "version": 1}


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_weights_path_that_never_ends_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "w.json"
    if kind == "fifo":
        os.mkfifo(path)  # a plain open() blocks here forever
    else:
        path.symlink_to("/dev/zero")  # a plain read grows until the OOM killer
    with pytest.raises(PolicyConfigError) as err:
        call_bounded(lambda: load_policy("learned", {"weights": str(path)}), seconds=20)
    assert err.value.key == "weights"
    assert f"{path}: cannot read the weights file (not a regular file" in str(err.value)


def test_a_weights_file_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({**WEIGHTS, "bias": 0.5}).encode())
    policy = load_policy("learned", {"weights": str(path)})
    assert policy.model.bias == 0.5  # type: ignore[attr-defined]


@pytest.mark.parametrize(("content", "says"), [
    ({"bias": 1e308, "features": {name: [1e308] * n for name, n in FEATURES}},
     "the weights reach a log-odds of inf"),
    ({"features": {"hits": [0, 0, 0, 0, 0, 1e7]}}, "the weights reach a log-odds of 1e+07"),
    ({"mean_logit": -1e308}, "'mean_logit' -1e+308 is over the limit"),
])
def test_weights_a_score_would_overflow_on_are_refused_at_load(
        tmp_path: Path, content: dict[str, object], says: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({**WEIGHTS, **content}), encoding="utf-8")
    with pytest.raises(PolicyConfigError) as err:
        load_policy("learned", {"weights": str(path)})
    assert err.value.key == "weights" and says in str(err.value), str(err.value)


def test_a_lint_time_check_opens_no_weights_file(tmp_path: Path) -> None:
    from radix_evict.inputs import named_files_closed

    fifo = tmp_path / "w.json"
    os.mkfifo(fifo)
    with named_files_closed():
        policy = call_bounded(lambda: load_policy("learned", {"weights": str(fifo)}))
    assert policy.model.bias == 0.0  # type: ignore[attr-defined]
    with named_files_closed(), pytest.raises(PolicyConfigError):
        load_policy("learned", {"weights": ""})  # the path's form is still checked


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
