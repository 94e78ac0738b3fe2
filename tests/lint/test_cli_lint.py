"""CLI: ``radix-evict lint`` on YAML, JSON and TOML serving configs, and the pre-commit hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.rigs import run_cli

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def lint(*paths: Path, as_json: bool = True) -> Any:
    args = ["lint", *(str(p) for p in paths)] + (["--json"] if as_json else [])
    return run_cli(*args)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = {
    "good.yaml": "model-path: m\nradix-eviction-policy: slru\n"
                 "radix-eviction-policy-config: '{\"protected_threshold\": 3}'\n",
    "good.json": json.dumps({"server": {"radix_eviction_policy": "tlru",
                                       "radix_eviction_policy_config": {
                                           "threshold": 512, "next_prompt_estimate": 200}}}),
    "good.toml": '[server]\nradix-eviction-policy = "lfu"\n',
    "nested.yml": "deploy:\n  servers:\n    - name: a\n      args:\n"
                  "        --radix-eviction-policy: priority\n",
    "no_policy.yaml": "model-path: m\nport: 30000\n",
    "empty.yaml": "",
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_files_pass(tmp_path: Path, name: str) -> None:
    r = lint(write(tmp_path, name, GOOD[name]))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"status": "ok", "files": 1, "errors": [], "warnings": []}


BAD = [
    # file, content, loc, type, text in msg or hint
    ("typo.yaml",
     "server:\n  radix-eviction-policy: slru\n  radix-eviction-policy-config:\n"
     "    protected_treshold: 3\n",
     "server.radix-eviction-policy-config.protected_treshold", "extra_forbidden",
     "did you mean 'protected_threshold'"),
    ("type.json",
     json.dumps({"radix-eviction-policy": "slru",
                 "radix-eviction-policy-config": '{"protected_threshold": "3"}'}),
     "radix-eviction-policy-config.protected_threshold", "int_type", "must be an integer"),
    ("rule.toml",
     '[server]\nradix-eviction-policy = "tlru"\n[server.radix-eviction-policy-config]\n'
     "threshold = 4\nnext_prompt_estimate = 6\n",
     "server.radix-eviction-policy-config.threshold", "value_error",
     "greater than next_prompt_estimate"),
    ("unknown.yaml", "servers:\n  - radix_eviction_policy: lruu\n",
     "servers[0].radix_eviction_policy", "unknown_policy", "did you mean 'lru'"),
    ("hidden.yaml", "radix-eviction-policy: mru\n", "radix-eviction-policy", "hidden_policy",
     "not on --radix-eviction-policy's choices"),
    ("implied_lru.yaml", 'radix-eviction-policy-config: {"protected_threshold": 3}\n',
     "radix-eviction-policy-config.protected_threshold", "extra_forbidden",
     "SGLang uses lru"),
    ("badjson_config.yaml",
     "radix-eviction-policy: slru\nradix-eviction-policy-config: '{\"protected_threshold\": 3'\n",
     "radix-eviction-policy-config", "json_invalid", "not valid JSON"),
    ("notname.yaml", "radix-eviction-policy: 3\n", "radix-eviction-policy", "policy_type",
     "policy name"),
    ("tlru_no_config.toml", 'radix-eviction-policy = "tlru"\n', "radix-eviction-policy",
     "value_error", "radix-eviction-policy-config is not set"),
]


@pytest.mark.parametrize(("name", "text", "loc", "type_", "needle"), BAD,
                         ids=[b[0] for b in BAD])
def test_bad_files_report_file_and_key_path(
    tmp_path: Path, name: str, text: str, loc: str, type_: str, needle: str
) -> None:
    path = write(tmp_path, name, text)
    r = lint(path)
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert data["status"] == "invalid"
    (err,) = data["errors"]
    assert set(err) >= {"file", "loc", "type", "msg", "hint"}
    assert err["file"] == str(path)
    assert err["loc"] == loc and err["type"] == type_
    assert needle in f"{err['msg']} {err['hint']}"
    human = lint(path, as_json=False)
    assert human.exit_code == 1
    assert f"{path}:{err['line']}:{err['column']}: error: {loc}: " in human.stderr
    assert "Traceback" not in human.stderr


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [("broken.yaml", "a:\n  radix-eviction-policy: [slru\n", 3),
     ("broken.json", '{"radix-eviction-policy": "lru",}', 1),
     ("broken.toml", 'radix-eviction-policy = "lru\n', 1)],
)
def test_malformed_files_name_the_line(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = write(tmp_path, name, text)
    r = lint(path)
    assert r.exit_code == 1
    (err,) = json.loads(r.stdout)["errors"]
    assert err["type"] == "parse_error" and err["file"] == str(path)
    assert err["line"] == line and err["column"] >= 1
    assert "malformed" in err["msg"]


def test_every_problem_in_every_file_is_reported(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "x:\n  radix-eviction-policy: lfu\n"
              "  radix-eviction-policy-config: {k: 1}\ny:\n  radix-eviction-policy: nope\n")
    b = write(tmp_path, "b.yaml", GOOD["good.yaml"])
    r = lint(a, b, tmp_path / "missing.yaml")
    data = json.loads(r.stdout)
    assert data["files"] == 3
    locs = {(e["file"], e["loc"]) for e in data["errors"]}
    assert locs == {(str(a), "x.radix-eviction-policy-config.k"),
                    (str(a), "y.radix-eviction-policy"),
                    (str(tmp_path / "missing.yaml"), "")}
    assert r.exit_code == 2 and data["status"] == "error"  # a missing file is an env error


def test_multi_document_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "multi.yaml", "radix-eviction-policy: lru\n---\n"
                 "radix-eviction-policy: lfuu\n")
    (err,) = json.loads(lint(path).stdout)["errors"]
    assert err["loc"] == "document[1].radix-eviction-policy"


def test_ok_message_for_people(tmp_path: Path) -> None:
    r = lint(write(tmp_path, "g.toml", GOOD["good.toml"]), as_json=False)
    assert r.exit_code == 0 and "OK: 1 file checked" in r.stdout


def test_pre_commit_hook_definition() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "radix-evict-lint"]
    assert hook["entry"] == "radix-evict lint"
    assert hook["language"] == "python"
    assert "files" not in hook  # the types below choose the files
    # pre-commit's (identify's) tag for each file type lint reads by its shape.
    assert set(hook["types_or"]) == {"yaml", "json", "toml", "shell", "dockerfile"}
    from radix_evict.lint.readers.files import file_kind

    samples = {"yaml": "a/b.yml", "json": "c.json", "toml": "d.toml", "shell": "run.sh",
               "dockerfile": "deploy/Dockerfile"}
    assert {tag: file_kind(Path(name), "") for tag, name in samples.items()} == {
        "yaml": "yaml", "json": "json", "toml": "toml", "shell": "shell",
        "dockerfile": "dockerfile"}
    assert file_kind(Path("start"), "#!/bin/bash\nexec sglang serve m\n") == "shell"
    for name in ("Dockerfile.gpu", "sglang.Dockerfile", "Containerfile"):
        assert file_kind(Path(name), "") == "dockerfile", name


def test_docs_example_is_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/linting.md's first console example: the file, the command and its output."""
    import re

    page = (ROOT / "docs" / "linting.md").read_text()
    m = re.search(r"```console\n\$ cat (\S+)\n(.*?)\$ radix-evict lint (\S+)\n(.*?)\$ echo \$\?\n"
                  r"(\d+)\n```", page, re.S)
    assert m, "the example is missing from docs/linting.md"
    name, content, target, shown, code = m.groups()
    monkeypatch.chdir(tmp_path)
    Path(name).parent.mkdir(parents=True, exist_ok=True)
    Path(name).write_text(content)
    r = run_cli("lint", target)
    assert r.exit_code == int(code)
    assert r.output.splitlines() == shown.splitlines()


def _with_example_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example package's policies (gdsf, reuse), with radix-evict's SGLang plugin allowed."""
    from radix_evict import registry

    monkeypatch.setenv("RADIX_EVICT_PLUGINS", "costaware")
    monkeypatch.setenv("SGLANG_PLUGINS", "")
    registry.reload()


def lint_error(path: Path, command: str) -> dict[str, Any]:
    """The one error ``lint`` reports on a script holding ``command`` (it exits 1)."""
    path.write_text(f"python -m sglang.launch_server {command}\n")
    r = run_cli("lint", str(path), "--json")
    assert r.exit_code == 1, r.output
    (err,) = json.loads(r.stdout)["errors"]
    return err  # type: ignore[no-any-return]


def test_a_stateful_policy_is_not_flagged_as_not_runnable_in_sglang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reuse keeps state through lifecycle callbacks; the SGLang plugin delivers SGLang's
    tree events to them, so lint (as SGLang's startup) accepts it like any plugin policy.
    (It used to be an error, not_runnable_in_sglang, when the plugin refused it.)"""
    _with_example_package(monkeypatch)
    path = tmp_path / "serve.sh"
    path.write_text("python -m sglang.launch_server --radix-eviction-policy reuse\n")
    r = run_cli("lint", str(path), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["errors"] == []
    assert [w["type"] for w in out["warnings"]] == ["plugin_policy"]  # as for gdsf
    # The plugin's factory builds it, events and all.
    from radix_evict import registry
    from radix_evict.sglang.strategies import bridged

    assert bridged("reuse", registry)().events is not None
    path.write_text("python -m sglang.launch_server --radix-eviction-policy gdsf\n")
    assert run_cli("lint", str(path)).exit_code == 0


def test_a_policy_that_fails_to_build_fails_as_sglang_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_example_package(monkeypatch)
    from radix_evict import registry

    def broken(name: str, config: Any = None) -> Any:
        raise RuntimeError("no GPU to measure credit on")

    monkeypatch.setattr(registry, "load_policy", broken)
    err = lint_error(tmp_path / "serve.sh", "--radix-eviction-policy gdsf")
    assert err["type"] == "policy_failed"
    assert err["msg"].endswith("the gdsf strategy: RuntimeError: no GPU to measure credit on")


def test_with_the_radix_cache_disabled_a_plugin_policy_problem_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_example_package(monkeypatch)
    from radix_evict import registry

    def broken(name: str, config: Any = None) -> Any:
        raise RuntimeError("no GPU to measure credit on")

    monkeypatch.setattr(registry, "load_policy", broken)
    path = tmp_path / "serve.sh"
    path.write_text("python -m sglang.launch_server --disable-radix-cache "
                    "--radix-eviction-policy gdsf\n")
    r = run_cli("lint", str(path), "--json")
    assert r.exit_code == 0, r.output
    (warning,) = [w for w in json.loads(r.stdout)["warnings"]
                  if w["type"] == "policy_failed"]
    assert "builds no eviction strategy" in warning["msg"]
