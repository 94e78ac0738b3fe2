"""lint's readers: shell splitting, the positioned JSON and YAML readers, bounds, formats."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pytest
import yaml
from helpers.rigs import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from radix_evict.lint.readers import yaml_tree as lint_yaml
from radix_evict.lint.readers.json_tree import parse_json
from radix_evict.lint.readers.nodes import LimitExceeded, ParseFailure, to_python
from radix_evict.lint.readers.shell import is_opaque, split_commands
from radix_evict.lint.text import Source, Text

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def words(script: str) -> list[list[str]]:
    script_text = Text.at(script, Source("s", script), 0)
    return [[w.text for w in cmd] for cmd in split_commands(script_text)]


# ------------------------------------------------------------------ shell


@pytest.mark.parametrize(("script", "expected"), [
    ("a b  c", [["a", "b", "c"]]),
    ("a 'b c' \"d e\"", [["a", "b c", "d e"]]),
    ("a \\\n  b", [["a", "b"]]),
    ("a && b; c | d || e & f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
    ("x # comment 'quote\ny", [["x"], ["y"]]),
    ("echo a#b", [["echo", "a#b"]]),
    ("a $(VAR) ${X:-y z} `cmd arg` $HOME", [["a", "$(VAR)", "${X:-y z}", "`cmd arg`", "$HOME"]]),
    ('a "$(echo "q r")" s', [["a", '$(echo "q r")', "s"]]),
    ("a \"x\\\"y\" 'it'\\''s'", [["a", 'x"y', "it's"]]),
    ("a 2>&1 >/tmp/log b < in", [["a", "b"]]),
    ("cat <<EOF\n--radix-eviction-policy x\nEOF\nnext", [["cat"], ["next"]]),
    ("FOO=1 python -m m", [["FOO=1", "python", "-m", "m"]]),
    ("''", [[""]]),
])
def test_shell_words(script: str, expected: list[list[str]]) -> None:
    assert words(script) == expected


def test_shell_words_know_their_columns() -> None:
    script = "run \\\n  --flag 'a b'\"c\"\n"
    src = Source("s", script)
    (cmd,) = split_commands(Text.at(script, src, 0))
    flag, value = cmd[1], cmd[2]
    assert flag.where(0) == (2, 3)
    assert value.text == "a bc"
    assert [value.where(i) for i in range(4)] == [(2, 11), (2, 12), (2, 13), (2, 16)]


def test_opaque_words() -> None:
    assert is_opaque("$(POLICY)") and is_opaque("${P}") and is_opaque("x$P") and is_opaque("`p`")
    assert not is_opaque("lru") and not is_opaque('{"a": 1}')


# ------------------------------------------------------------------ JSON

JSON_TEXTS = ['{"a": [1, 2.5, -3e2, true, false, null]}', '"x\\u00e9\\n"', "NaN", "-Infinity",
              "[]", "{}", '  {"a" : {"b": "c"}}  ', "0", "-0.5"]
BAD_JSON = ['{"a": 1,}', "[1 2]", "{'a': 1}", "01", '"\\x"', '{"a" 1}', "[", "", "1 2",
            '"a\tb"', "tru"]


@pytest.mark.parametrize("text", JSON_TEXTS)
def test_json_reader_reads_what_json_loads_reads(text: str) -> None:
    got = to_python(parse_json(text, Source("j", text)))
    want = json.loads(text)
    assert json.dumps(got, allow_nan=True) == json.dumps(want, allow_nan=True)


@pytest.mark.parametrize("text", BAD_JSON)
def test_json_reader_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(ParseFailure):
        parse_json(text, Source("j", text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_json_reader_round_trips(value: Any) -> None:
    text = json.dumps(value)
    assert to_python(parse_json(text, Source("j", text))) == json.loads(text)


def test_json_duplicates_and_depth() -> None:
    text = '{"a": 1, "a": 2}'
    node = parse_json(text, Source("j", text))
    ((first, again),) = node.duplicates()
    assert (first.start, again.start) == (1, 9)
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(LimitExceeded):
        parse_json(deep, Source("j", deep))


# ------------------------------------------------------------------ YAML


def test_libyaml_is_used_when_present() -> None:
    if yaml.__with_libyaml__:
        assert lint_yaml.Loader is yaml.CSafeLoader
    else:  # pragma: no cover - PyYAML built without libyaml
        assert lint_yaml.Loader is yaml.SafeLoader


YAMLS = ["a: 1\nb: [x, 'y', \"z\"]\nc: {d: null, e: 1.5, f: true}\n",
         "- &x {k: v}\n- *x\n- !!str 3\n- 0x1f\n- 2024-01-02\n- ~\n",
         "a: |\n  one\n  two\nb: >-\n  folded\n  line\n"]


@pytest.mark.parametrize("text", YAMLS)
def test_yaml_reader_reads_what_safe_load_reads(text: str) -> None:
    (doc,) = lint_yaml.parse_yaml(Source("y", text))
    assert doc is not None
    assert to_python(doc) == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "word", "line", "col"), [
    ("a: plain --radix-eviction-policy x\n", "--radix", 1, 10),
    ("a: 'it''s --radix-eviction-policy'\n", "--radix", 1, 11),
    ('a: "q\\" --radix-eviction-policy"\n', "--radix", 1, 9),
    ("a: |\n  first\n    --radix-eviction-policy x\n", "--radix", 3, 5),
    ("a: >\n  first\n  --radix-eviction-policy x\n", "--radix", 3, 3),
    ("a: plain\n  --radix-eviction-policy x\n", "--radix", 2, 3),
])
def test_scalar_characters_map_to_the_file(text: str, word: str, line: int, col: int) -> None:
    (doc,) = lint_yaml.parse_yaml(Source("y", text))
    assert doc is not None
    value = doc.items[0][1].text()
    assert value.where(value.text.index(word)) == (line, col)


# ------------------------------------------------------------------ bounds, as a new user tried


def lint_json(*paths: Path | str, extra: tuple[str, ...] = ()) -> Any:
    r = run_cli("lint", *(str(p) for p in paths), "--json", *extra)
    return r, json.loads(r.stdout)


def test_hostile_files_each_get_their_own_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("radix-eviction-policy: " + "[" * 100_000 + "]" * 100_000 + "\n")
    cycle = tmp_path / "cycle.yaml"
    cycle.write_text("radix-eviction-policy: &a [*a]\n")
    laughs = tmp_path / "laughs.yaml"
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    lines.append("radix-eviction-policy-config: {x: *a9}")
    laughs.write_text("\n".join(lines) + "\n")
    aliased = tmp_path / "aliased.yaml"  # the 263-byte aliased policy value
    aliased.write_text("a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c]\n"
                       "server:\n  radix-eviction-policy: *d\n")
    good = tmp_path / "good.sh"
    good.write_text("python -m sglang.launch_server --radix-eviction-policy lfuu\n")
    start = time.monotonic()
    r, data = lint_json(deep, cycle, laughs, aliased, good)
    elapsed = time.monotonic() - start
    by_file = {Path(e["file"]).name: e for e in data["errors"]}
    assert by_file["deep.yaml"]["type"] == "too_deep"
    assert by_file["cycle.yaml"]["type"] == "alias_cycle"
    assert by_file["laughs.yaml"]["type"] == "value_too_large"
    assert by_file["aliased.yaml"]["type"] == "policy_type"
    assert len(by_file["aliased.yaml"]["msg"]) < 200
    assert by_file["good.sh"]["type"] == "unknown_policy"
    assert "Traceback" not in r.output and "internal error" not in r.output
    assert elapsed < 60, elapsed  # a safety net; bench/bench_lint.py records the real figures


def test_same_setting_twice_checks_both(tmp_path: Path) -> None:
    path = tmp_path / "values.yaml"
    path.write_text("server:\n  radix-eviction-policy: bogus\n  radix_eviction_policy: lru\n")
    _, data = lint_json(path)
    assert {e["type"] for e in data["errors"]} == {"duplicate_setting", "unknown_policy"}


def test_a_file_without_eviction_settings_passes_whatever_it_is(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("a: [unclosed\n  b: {\n")
    r, data = lint_json(path)
    assert r.exit_code == 0 and data["errors"] == []


# ------------------------------------------------------------------ --config FILE


def test_config_file_found_beside_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    conf = tmp_path / "conf" / "sglang.yaml"
    conf.write_text("model-path: m\nradix-eviction-policy: lfu\nradix-eviction-policy-config: "
                    "'{\"k\": 1}'\n")
    compose = tmp_path / "compose.yaml"
    compose.write_text("services:\n  s:\n    command: [sglang, serve, m, --config, "
                       "conf/sglang.yaml]\n")
    _, data = lint_json(compose)
    (err,) = data["errors"]
    assert err["file"] == str(conf) and (err["line"], err["column"]) == (3, 33)
    assert err["type"] == "extra_forbidden"


def test_config_file_abbreviation_is_ignored_by_sglang(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("sglang serve m --conf x.yaml --radix-eviction-policy lru\n")
    r, data = lint_json(path)
    assert r.exit_code == 0
    (w,) = data["warnings"]
    assert w["type"] == "config_ignored" and "abbreviated" in w["msg"]
    r, _ = lint_json(path, extra=("--strict",))
    assert r.exit_code == 1


def test_config_file_must_be_yaml(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("sglang serve m --config /etc/sglang.json --radix-eviction-policy lru\n")
    _, data = lint_json(path)
    (err,) = data["errors"]
    assert err["type"] == "config_file" and ".json" in err["msg"]


# ------------------------------------------------------------------ output formats


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    path = tmp_path / "run,1.sh"
    path.write_text("sglang serve m --radix-eviction-policy lfuu\n"
                    "sglang serve m --radix-eviction-policy-c '{}'\n")
    return path


def test_github_annotations(mixed: Path) -> None:
    r = run_cli("lint", "--format", "github", str(mixed))
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    file_prop = str(mixed).replace(",", "%2C")
    assert lines[0].startswith(f"::error file={file_prop},line=1,col=40,title=radix-evict lint%3A "
                               "unknown_policy::")
    assert lines[1].startswith(f"::warning file={file_prop},line=2,col=16,")


def test_sarif(mixed: Path) -> None:
    r = run_cli("lint", "--format", "sarif", str(mixed))
    log = json.loads(r.stdout)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert [(x["ruleId"], x["level"]) for x in results] == [("unknown_policy", "error"),
                                                            ("abbreviation", "warning")]
    for x in results:
        assert rules[x["ruleIndex"]] == x["ruleId"]
        loc = x["locations"][0]["physicalLocation"]
        # the name holds a comma: percent-encoded (RFC 3986), it decodes back to the path
        assert loc["artifactLocation"]["uri"] == quote(str(mixed))
        assert unquote(loc["artifactLocation"]["uri"]) == str(mixed)
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1,
                                                                         "startColumn": 40}


@pytest.mark.parametrize("name", ["a,b.sh", "c:d.sh", "100%.sh", "café.sh", "line\nbreak.sh",
                                  "sp ace#q?.sh", "back\\slash.sh"])
def test_sarif_uri_is_an_rfc3986_reference_that_decodes_back(tmp_path: Path, name: str,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from radix_evict.lint.formats import artifact_uri

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / name).write_text("sglang serve m --radix-eviction-policy lfuu\n")
    monkeypatch.chdir(tmp_path)
    rel = str(Path("sub") / name)
    log = json.loads(run_cli("lint", "--format", "sarif", rel).stdout)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"]
    assert uri == artifact_uri(rel)
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/%")
    assert set(uri) <= allowed, uri  # nothing raw: every other character is percent-encoded
    parts = urlsplit(uri)
    assert parts.scheme == "" and parts.netloc == "" and not uri.startswith("/")  # relative
    assert unquote(uri, errors="strict") == rel
    assert artifact_uri(str(tmp_path / "sub" / name)).startswith("/")  # absolute stays absolute


def test_strict_and_json(mixed: Path, tmp_path: Path) -> None:
    warn_only = tmp_path / "w.sh"
    warn_only.write_text("sglang serve m --radix-eviction-policy-c '{}'\n")
    r, data = lint_json(warn_only)
    assert r.exit_code == 0 and data["status"] == "ok" and len(data["warnings"]) == 1
    r, data = lint_json(warn_only, extra=("--strict",))
    assert r.exit_code == 1 and data["status"] == "invalid" and len(data["errors"]) == 1
    text = run_cli("lint", str(warn_only))
    assert text.exit_code == 0 and "OK: 1 file checked (1 warning or note)" in text.stdout


def test_unknown_format() -> None:
    r = run_cli("lint", "--format", "xml", "x.yaml")
    assert r.exit_code == 2 and "--format" in r.output


def test_folders_expand_to_known_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.yaml").write_text("radix-eviction-policy: bad\n")
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "Dockerfile").write_text(
        'CMD ["python3", "-m", "sglang.launch_server", "--radix-eviction-policy", "bad"]\n')
    (tmp_path / "deploy" / "notes.txt").write_text("--radix-eviction-policy bad\n")
    _, data = lint_json(tmp_path)
    assert data["files"] == 1
    assert [Path(e["file"]).name for e in data["errors"]] == ["Dockerfile"]


def test_nan_is_not_a_float_for_messages() -> None:
    assert math.isnan(json.loads("NaN"))
