"""Plugin discovery and loading against fake installed distributions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_dists import FakeSite, policy_module
from helpers.signals import ctrl_c_raises

from radix_evict.errors import PluginLoadError, PolicyConfigError, PolicyConflictError
from radix_evict.policies.plugins import ENV_VAR, allow_list, find_plugins
from radix_evict.policies.registry import Registry

BROKEN_IMPORT = """
raise ImportError("needs the missing package 'sievelib'")
"""

RAISING_HOOK = """
from radix_evict import EvictionPolicy, PolicySpec, hookimpl


class Half(EvictionPolicy):
    name = "halfway"

    def score(self, node):
        return 0


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="halfway", policy=Half, summary="registered, then the hook raises"))
    raise RuntimeError("the hook blew up after registering 'halfway'")
"""

LAX_CONFIG = """
from pydantic import ConfigDict
from radix_evict import EvictionPolicy, PolicyConfig, PolicySpec, hookimpl


class LaxConfig(PolicyConfig):
    model_config = ConfigDict(extra="allow")
    window: int = 4


class Lax(EvictionPolicy):
    name = "lax"
    Config = LaxConfig

    def score(self, node):
        return 0


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="lax", policy=Lax, summary="extra keys slip through"))
"""

LAX_NESTED = """
from pydantic import BaseModel
from radix_evict import EvictionPolicy, PolicyConfig, PolicySpec, hookimpl


class Inner(BaseModel):
    depth: int = 1


class OuterConfig(PolicyConfig):
    inner: Inner = Inner()


class Nested(EvictionPolicy):
    name = "laxnested"
    Config = OuterConfig

    def score(self, node):
        return 0


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="laxnested", policy=Nested, summary="nested model lets keys in"))
"""

MISSPELT_HOOK = """
from radix_evict import hookimpl


@hookimpl
def radix_evict_register_policy(register):
    pass
"""

USES_REGISTRY = """
from radix_evict import hookimpl, registry


@hookimpl
def radix_evict_register_policies(register):
    registry.choices()
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSite]:
    s = FakeSite(tmp_path / "site", monkeypatch)
    yield s
    s.cleanup()


def only(*eps: str) -> Registry:
    """A fresh registry that loads the built-ins plus the named fake entry points."""
    return Registry(environ={ENV_VAR: ",".join(eps)})


def test_builtins_come_from_the_builtin_entry_point() -> None:
    reg = only()
    first = reg.plugins[0].source
    assert first.builtin and first.entry_point == "builtin"
    assert first.distribution.lower().replace("_", "-") == "radix-evict"
    for spec in reg.specs()[:8]:
        assert spec.entry_point == "builtin"
    assert set(reg.choices(extended=True)) >= {"lru", "lfu", "slru", "priority", "tlru",
                                               "fifo", "mru", "filo"}


def test_broken_import_is_recorded_and_others_still_load(site: FakeSite) -> None:
    site.add("radix-evict-broken", "1.2.3", {"broken": BROKEN_IMPORT})
    site.add("radix-evict-good", "0.4", {"good": policy_module("goodpol")})
    reg = only("broken", "good")
    [failure] = reg.failures
    assert failure.distribution == "radix-evict-broken"
    assert failure.version == "1.2.3"
    assert failure.entry_point == "broken"
    assert failure.phase == "import"
    assert "sievelib" in failure.error
    assert "goodpol" in reg.choices(extended=True)
    assert reg.load_policy("goodpol").score  # the good plugin is unaffected
    assert reg.get("lru").distribution  # built-ins too


def test_a_policy_only_a_broken_plugin_could_provide_names_its_distribution(
    site: FakeSite,
) -> None:
    site.add("radix-evict-sieve", "1.2.3", {"broken": BROKEN_IMPORT})
    reg = only("broken")
    with pytest.raises(PluginLoadError) as info:
        reg.load_policy("sieve")
    message = str(info.value)
    assert "radix-evict-sieve" in message and "1.2.3" in message and "broken" in message
    assert "sievelib" in message
    assert info.value.problems[0].type == "plugin_failed"
    # a near miss of a registered name stays a plain unknown-policy error, with a note
    with pytest.raises(PolicyConfigError) as near:
        reg.load_policy("lruu")
    assert not isinstance(near.value, PluginLoadError)
    assert "did you mean 'lru'" in str(near.value) and "radix-evict-sieve" in str(near.value)


def test_a_failed_plugin_unrelated_to_the_name_leaves_it_an_unknown_policy(
    site: FakeSite,
) -> None:
    site.add("radix-evict-broken", "1.2.3", {"broken": BROKEN_IMPORT})
    reg = only("broken")
    with pytest.raises(PolicyConfigError) as info:
        reg.load_policy("nosuch")
    assert not isinstance(info.value, PluginLoadError)
    assert info.value.problems[0].type == "unknown_policy"
    message = str(info.value)
    assert message.startswith("unknown policy 'nosuch'")
    assert "radix-evict-broken 1.2.3" in message and "sievelib" in message  # still noted


def test_raising_hook_discards_its_registrations_and_is_named(site: FakeSite) -> None:
    site.add("aaa-raises", "2.0", {"raiser": RAISING_HOOK})
    site.add("zzz-good", "1.0", {"good": policy_module("zgood")})
    reg = only("raiser", "good")
    [failure] = reg.failures
    assert (failure.distribution, failure.version, failure.entry_point) == ("aaa-raises", "2.0",
                                                                          "raiser")
    assert failure.phase == "register"
    assert failure.policies == ("halfway",)
    assert "RuntimeError" in failure.error
    assert "halfway" not in reg
    assert "zgood" in reg  # loaded after the raising plugin, unaffected
    with pytest.raises(PluginLoadError, match="aaa-raises") as info:
        reg.load_policy("halfway")
    assert "comes from" in str(info.value)


def test_duplicate_name_first_wins_and_requesting_it_fails(site: FakeSite) -> None:
    site.add("alpha-policies", "1.0", {"alpha": policy_module("shared")})
    site.add("beta-policies", "3.1", {"beta": policy_module("shared")})
    reg = only("alpha", "beta")
    [conflict] = reg.conflicts
    assert conflict.name == "shared"
    assert conflict.first.distribution == "alpha-policies"
    assert conflict.second.distribution == "beta-policies"
    assert reg.get("shared").distribution == "alpha-policies"
    with pytest.raises(PolicyConflictError) as info:
        reg.load_policy("shared")
    assert "alpha-policies" in str(info.value) and "beta-policies" in str(info.value)
    assert reg.validate("shared", None)[0].type == "name_conflict"
    with pytest.raises(PolicyConflictError):
        reg.check_choice("shared", extended=True)


SHADOW_AND_OWN = """
from radix_evict import EvictionPolicy, PolicySpec, hookimpl


class Mine(EvictionPolicy):
    def score(self, node):
        return node.last_access_time


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="ownpol", policy=Mine, summary="its own policy"))
    register(PolicySpec(name="lru", policy=Mine, summary="takes the built-in's name"))
"""


def test_a_package_that_registers_a_builtins_name_fails_alone(site: FakeSite) -> None:
    site.add("shadowing-pkg", "0.1", {"shadow": SHADOW_AND_OWN})
    site.add("bystander-pkg", "1.0", {"bystander": policy_module("bystander")})
    reg = only("shadow", "bystander")
    assert reg.conflicts == []  # not a conflict that makes 'lru' unusable for everyone
    assert type(reg.load_policy("lru")).__name__ == "LRUPolicy"
    assert reg.validate("lru", None, extended=False) == []
    assert reg.get("lru").entry_point == "builtin"
    [failure] = reg.failures  # recorded against the plugin
    assert (failure.distribution, failure.entry_point, failure.phase) == (
        "shadowing-pkg", "shadow", "register")
    assert "'lru'" in failure.error and "built-in" in failure.error
    assert "ownpol" not in reg  # the package failed as a whole
    with pytest.raises(PluginLoadError, match="shadowing-pkg"):
        reg.load_policy("ownpol")
    assert "bystander" in reg  # other packages are unaffected


@pytest.mark.parametrize(("source", "needle"), [(LAX_CONFIG, "LaxConfig"),
                                                (LAX_NESTED, "Inner")])
def test_config_model_that_allows_extra_keys_is_refused(
    site: FakeSite, source: str, needle: str
) -> None:
    site.add("lax-pkg", "0.9", {"lax": source})
    reg = only("lax")
    [failure] = reg.failures
    assert failure.distribution == "lax-pkg"
    assert "PolicyRegistrationError" in failure.error
    assert needle in failure.error and "unknown keys" in failure.error
    assert not ({"lax", "laxnested"} & set(reg.choices(extended=True)))


def test_misspelt_hook_is_a_failure_not_silence(site: FakeSite) -> None:
    site.add("typo-pkg", "1.0", {"typo": MISSPELT_HOOK})
    [failure] = only("typo").failures
    assert failure.phase == "hooks"
    assert "radix_evict_register_policy" in failure.error


def test_plugin_that_uses_the_registry_while_loading_fails_cleanly(site: FakeSite) -> None:
    site.add("reentrant-pkg", "1.0", {"reentrant": USES_REGISTRY})
    reg = Registry(environ={ENV_VAR: "reentrant"})
    # the module imports the process-wide registry; make that the one loading
    import radix_evict

    original = radix_evict.registry
    radix_evict.registry = reg
    try:
        [failure] = reg.failures
    finally:
        radix_evict.registry = original
    assert "while plugins were loading" in failure.error


def test_allow_list_parsing() -> None:
    assert allow_list({}) is None
    assert allow_list({ENV_VAR: ""}) == frozenset()
    assert allow_list({ENV_VAR: "  "}) == frozenset()
    assert allow_list({ENV_VAR: "a, b,,c "}) == frozenset({"a", "b", "c"})


def test_allow_list_filters_third_party_but_never_builtins(site: FakeSite) -> None:
    site.add("one-pkg", "1.0", {"one": policy_module("onepol")})
    site.add("two-pkg", "1.0", {"two": policy_module("twopol")})
    everything = Registry(environ={})
    assert {"onepol", "twopol"} <= set(everything.choices(extended=True))
    nothing = Registry(environ={ENV_VAR: ""})
    assert not ({"onepol", "twopol"} & set(nothing.choices(extended=True)))
    assert {"one", "two"} <= {s.entry_point for s in nothing.skipped}
    assert "lru" in nothing.choices()
    just_one = Registry(environ={ENV_VAR: "one,nosuch"})
    names = set(just_one.choices(extended=True))
    assert "onepol" in names and "twopol" not in names
    assert just_one.unmatched_allow == ["nosuch"]
    assert "builtin" not in {s.entry_point for s in just_one.skipped}


def test_allow_list_is_read_from_the_environment(
    site: FakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.add("env-pkg", "1.0", {"envpol": policy_module("envpol")})
    monkeypatch.setenv(ENV_VAR, "")
    reg = Registry()
    assert "envpol" not in reg
    monkeypatch.setenv(ENV_VAR, "envpol")
    assert "envpol" not in reg  # cached for the process...
    reg.reload()
    assert "envpol" in reg  # ...until reloaded


def test_load_order_is_stable_builtins_first(site: FakeSite) -> None:
    site.add("zeta-pkg", "1.0", {"zeta": policy_module("zetapol")})
    site.add("alpha-pkg", "1.0", {"alpha": policy_module("alphapol")})
    sources = [s for s in find_plugins() if s.entry_point in {"builtin", "zeta", "alpha"}]
    assert [s.entry_point for s in sources] == ["builtin", "alpha", "zeta"]
    reg = only("zeta", "alpha")
    assert [p.source.entry_point for p in reg.plugins] == ["builtin", "alpha", "zeta"]


def test_choice_list_extension_by_a_package(site: FakeSite) -> None:
    site.add("ext-pkg", "1.0", {"ext": policy_module("extpol", extend=("extpol", "fifo", "ghost"))})
    reg = only("ext")
    assert reg.choices() == ["lru", "lfu", "slru", "priority", "tlru", "extpol", "fifo"]
    assert reg.check_choice("fifo").name == "fifo"
    [problem] = reg.choice_problems
    assert problem.name == "ghost" and problem.distribution == "ext-pkg"
    # without the package, fifo is hidden again
    with pytest.raises(PolicyConfigError, match="hidden"):
        only().check_choice("fifo")


def test_loading_is_lazy_and_cached() -> None:
    calls: list[str] = []

    def find(group: str) -> list:
        calls.append(group)
        return []

    reg = Registry(find=find)
    assert not reg.loaded and calls == []
    reg.choices()
    reg.choices(extended=True)
    reg.failures  # noqa: B018
    assert reg.loaded and calls == ["radix_evict.policies"]
    reg.reload()
    assert not reg.loaded
    reg.choices()
    assert len(calls) == 2


def test_importing_radix_evict_loads_no_plugin(site: FakeSite, tmp_path: Path) -> None:
    marker = tmp_path / "imported.txt"
    source = f"open({str(marker)!r}, 'w').write('x')\n" + policy_module("sideeffect")
    site.add("noisy-pkg", "1.0", {"noisy": source})
    script = textwrap.dedent(
        f"""
        import sys, os
        import radix_evict
        from radix_evict import registry, RadixCache, load_policy, PolicySpec
        import radix_evict.testing
        assert not registry.loaded, "registry loaded at import"
        assert "radix_evict.builtin_policies" not in sys.modules, "built-ins imported"
        assert not os.path.exists({str(marker)!r}), "plugin module imported at import"
        assert "sideeffect" in registry.choices(extended=True)
        assert os.path.exists({str(marker)!r})
        assert "radix_evict.builtin_policies" in sys.modules
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(site.root)}
    env.pop(ENV_VAR, None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


CUSTOM_BASE_EXCEPTION = """
class PluginAbort(BaseException):
    pass


raise PluginAbort("the plugin gave up at import")
"""

FAKE_CTRL_C = """
raise KeyboardInterrupt("raised by the plugin, no key was pressed")
"""

REAL_CTRL_C = """
import os, signal, time

os.kill(os.getpid(), signal.SIGINT)
time.sleep(5)  # the signal's handler raises here
"""


@pytest.mark.parametrize(("source", "error"), [
    (CUSTOM_BASE_EXCEPTION, "PluginAbort: the plugin gave up at import"),
    (FAKE_CTRL_C, "KeyboardInterrupt: raised by the plugin"),
])
def test_a_base_exception_at_import_is_a_failed_plugin(
    site: FakeSite, source: str, error: str
) -> None:
    site.add("abort-pkg", "0.3", {"abort": source})
    site.add("fine-pkg", "1.0", {"fine": policy_module("finepol")})
    reg = only("abort", "fine")
    [failure] = reg.failures
    assert (failure.distribution, failure.phase) == ("abort-pkg", "import")
    assert failure.error.startswith(error)
    assert "finepol" in reg and "lru" in reg


def test_a_real_ctrl_c_while_a_plugin_imports_stops_the_load(site: FakeSite) -> None:
    site.add("slow-pkg", "1.0", {"slow": REAL_CTRL_C})
    reg = only("slow")
    with ctrl_c_raises(), pytest.raises(KeyboardInterrupt):
        reg.choices()
    assert not reg.loaded


@pytest.mark.parametrize("source", [CUSTOM_BASE_EXCEPTION, FAKE_CTRL_C])
def test_a_base_exception_at_import_breaks_no_unrelated_command(
    site: FakeSite, source: str
) -> None:
    site.add("abort-pkg", "0.3", {"abort": source})
    env = {**os.environ, "PYTHONPATH": str(site.root), ENV_VAR: "abort"}
    for args in (["validate", "-h"], ["validate", "-p", "lru"], ["list"]):
        r = subprocess.run([sys.executable, "-m", "radix_evict.cli", *args], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
    assert "abort-pkg" in r.stderr  # `list` mentions the failed plugin


def loose_plugin(imports: str, config: str) -> str:
    """A plugin module registering policy ``loose`` with the config class body ``config``."""
    return f"""
{imports}
from radix_evict import EvictionPolicy, PolicyConfig, PolicySpec, hookimpl
{config}

class Loose(EvictionPolicy):
    Config = LooseConfig

    def score(self, node):
        return 0


@hookimpl
def radix_evict_register_policies(register):
    register(PolicySpec(name="loose", policy=Loose))
"""


STRICT_FALSE_FIELD = loose_plugin("from pydantic import Field", """
class LooseConfig(PolicyConfig):
    a: int = Field(1, strict=False)
""")

ANY_ITEMS = loose_plugin("from typing import Any", """
class LooseConfig(PolicyConfig):
    items: list[Any] = []
""")

NESTED_NOT_STRICT = loose_plugin("from pydantic import BaseModel, ConfigDict", """
class Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    size: int = 1


class LooseConfig(PolicyConfig):
    items: tuple[Item, ...] = ()
""")


@pytest.mark.parametrize(("source", "field", "why", "config"), [
    (STRICT_FALSE_FIELD, "field a of LooseConfig", "strict=False", {"a": "4"}),
    (STRICT_FALSE_FIELD, "field a of LooseConfig", "strict=False", {"a": True}),
    (ANY_ITEMS, "field items of LooseConfig", "Any", {"items": [{"typo_key": 2}]}),
    (NESTED_NOT_STRICT, "nested model Item (field items)", "strict=True",
     {"items": [{"size": "2"}]}),
])
def test_a_config_model_that_coerces_anywhere_is_refused_naming_the_field(
    site: FakeSite, source: str, field: str, why: str, config: dict[str, Any]
) -> None:
    site.add("loose-pkg", "0.2", {"loose": source})
    reg = only("loose")
    [failure] = reg.failures
    assert failure.distribution == "loose-pkg" and failure.phase == "register"
    assert field in failure.error and why in failure.error, failure.error
    assert "loose" not in reg
    [problem] = reg.validate("loose", config)  # never coerced: the policy is not there
    assert problem.type == "plugin_failed" and "loose-pkg" in problem.msg


def test_the_model_rules_apply_to_the_example_package_and_the_builtins() -> None:
    from radix_evict.policies.strictness import config_model_problems

    reg = Registry(environ={})
    assert reg.failures == []
    for spec in reg.specs():
        assert config_model_problems(spec.config_model) == [], spec.name


@pytest.mark.parametrize(("allowed", "needle"), [
    ("radix-evict-costaware", "names 'radix-evict-costaware', a distribution; it takes entry "
     "point names: use 'costaware'"),
    ("nothing-like-it", "names 'nothing-like-it', which matches no installed entry point"),
    ("", "leaves out"),
])
def test_unknown_policy_says_the_allow_list_skipped_a_plugin(allowed: str, needle: str) -> None:
    reg = Registry(environ={ENV_VAR: allowed})
    assert "gdsf" not in reg
    with pytest.raises(PolicyConfigError) as info:
        reg.check_choice("gdsf")
    message = str(info.value)
    assert message.startswith("unknown policy 'gdsf'")
    assert needle in message, message
    # the suggestion lists every installed package that offers it (classics too, when installed)
    assert re.search(r"set RADIX_EVICT_PLUGINS=\S*costaware", message), message
    assert any(needle in n for n in reg.notes())
    assert "gdsf" in Registry(environ={ENV_VAR: "costaware"})


def test_choice_names_nobody_registered_are_shown(site: FakeSite) -> None:
    site.add("ext-pkg", "1.0", {"ext": policy_module("extpol", extend=("ghost",))})
    reg = only("ext")
    with pytest.raises(PolicyConfigError) as info:
        reg.check_choice("ghost")
    assert "ext-pkg (entry point 'ext') added 'ghost' to the choice list" in str(info.value)
    assert any("'ghost'" in n for n in reg.notes())
